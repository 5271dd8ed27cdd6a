package main

import (
	"slices"
	"testing"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		command string
		rest    []string
		db, mac string
	}{
		{"flags after the name", []string{"user", "add", "bob", "--db", "x.db"}, "user add", []string{"bob"}, "x.db", ""},
		{"flags before the name", []string{"--db", "x.db", "user", "add", "bob"}, "user add", []string{"bob"}, "x.db", ""},
		{"flags between the words", []string{"host", "--db=x.db", "add", "h1", "-mac", "00:11:22:33:44:55"}, "host add", []string{"h1"}, "x.db", "00:11:22:33:44:55"},
		{"a name after --", []string{"user", "add", "--db", "x.db", "--", "-bob"}, "user add", []string{"-bob"}, "x.db", ""},
		{"defaults", []string{"user", "list"}, "user list", []string{}, "nmauth.db", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, words, err := parseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			cmd, rest, err := findCommand(words)
			if err != nil {
				t.Fatal(err)
			}
			if cmd.name != tc.command || !slices.Equal(rest, tc.rest) || o.db != tc.db || o.mac != tc.mac {
				t.Errorf("got %q %q db=%q mac=%q", cmd.name, rest, o.db, o.mac)
			}
			if err := cmd.checkFlags(o); err != nil {
				t.Errorf("checkFlags: %v", err)
			}
		})
	}
}
