package nmauth_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// The bounds of what an embedder learns from go doc, as issue 32 sets
// them: maxAuthenticatorMethods methods of Authenticator, and maxRootNames
// entries of `go doc -short .`, where a const or var block counts once
// (the sentinel errors are one block, as STYLE.md asks).
// Lower the bounds as names go, never raise them without a reason in the
// commit. (60: from 85, the master key's and the secret file's loading
// moved to nmauthd, a record's State became one opaque type, twin types
// merged (AccessToken and its views, HostLogin and NodeLogin, Stats and
// ClientStats), and the sentinel errors of the Store, imports, repair,
// extensions and master keys joined the one block of errors.go. 62:
// enrollment keys add their record and its optional Store contract, as
// access tokens have theirs; their administration is on Admin. 59: the
// audit events are one list, in audit.go.)
const (
	maxAuthenticatorMethods = 30
	maxRootNames            = 59
)

// TestSurface counts, over the root package's non-test files, the methods
// of Authenticator and the exported names as `go doc -short .` lists them
// (a type, a function, a constructor listed under its type, and a const or
// var declaration, whose block counts once), and fails past the bounds.
func TestSurface(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	pkg, ok := pkgs["nmauth"]
	if !ok {
		t.Fatal("no package nmauth in .")
	}
	d := doc.New(pkg, "github.com/nmauth/nmauth", 0)
	names := len(d.Consts) + len(d.Vars) + len(d.Funcs)
	methods := -1
	for _, typ := range d.Types {
		names += 1 + len(typ.Consts) + len(typ.Vars) + len(typ.Funcs)
		if typ.Name == "Authenticator" {
			methods = len(typ.Methods)
		}
	}
	if methods < 0 {
		t.Fatal("no type Authenticator")
	}
	t.Logf("Authenticator has %d methods; the package exports %d names", methods, names)
	if methods > maxAuthenticatorMethods {
		t.Errorf("Authenticator has %d methods, more than %d: put administration on Admin, and an extension's powers on Extension", methods, maxAuthenticatorMethods)
	}
	if names > maxRootNames {
		t.Errorf("the package exports %d names, more than %d", names, maxRootNames)
	}
}
