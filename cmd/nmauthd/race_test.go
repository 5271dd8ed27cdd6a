//go:build race

package main

// raceBuild makes the tests build nmauthd with the race detector too.
const raceBuild = true
