package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nmauth/nmauth"
)

// nmauthd's own routes, one document part per wire profile, merged into
// the library's document of that profile: the library describes the
// routes its handler serves, nmauthd those it adds.
var (
	//go:embed openapi/spec.yaml
	ownSpec []byte
	//go:embed openapi/netmaker.yaml
	ownNetmaker []byte
)

// openAPIDocs are nmauthd's documents, merged once per profile.
var openAPIDocs = map[nmauth.WireProfile]func() ([]byte, error){
	nmauth.WireSpec:     sync.OnceValues(func() ([]byte, error) { return mergeOpenAPI(nmauth.OpenAPI(nmauth.WireSpec), ownSpec) }),
	nmauth.WireNetmaker: sync.OnceValues(func() ([]byte, error) { return mergeOpenAPI(nmauth.OpenAPI(nmauth.WireNetmaker), ownNetmaker) }),
}

// openAPI returns nmauthd's OpenAPI document of wire: the library's, with
// nmauthd's own routes. The parts are embedded and tested, so a failure to
// merge them is a bug of the build.
func openAPI(wire nmauth.WireProfile) []byte {
	doc, err := openAPIDocs[wire]()
	if err != nil {
		panic("nmauthd: OpenAPI document: " + err.Error())
	}
	return doc
}

// mergeOpenAPI adds the paths and components of own to those of base and
// appends own's info.description to base's. A path or component both
// define is an error.
func mergeOpenAPI(base, own []byte) ([]byte, error) {
	var b, o yaml.Node
	if err := yaml.Unmarshal(base, &b); err != nil {
		return nil, fmt.Errorf("library document: %w", err)
	}
	if err := yaml.Unmarshal(own, &o); err != nil {
		return nil, fmt.Errorf("nmauthd's part: %w", err)
	}
	if len(b.Content) != 1 || len(o.Content) != 1 {
		return nil, errors.New("a document is empty")
	}
	root, part := b.Content[0], o.Content[0]
	if err := mergeMaps(mapping(root, "paths"), mapping(part, "paths")); err != nil {
		return nil, err
	}
	for _, kind := range []string{"parameters", "responses", "schemas"} {
		if err := mergeMaps(mapping(mapping(root, "components"), kind), mapping(mapping(part, "components"), kind)); err != nil {
			return nil, err
		}
	}
	if d, more := mapping(mapping(root, "info"), "description"), mapping(mapping(part, "info"), "description"); more != nil && d != nil {
		d.Value += more.Value
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&b); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// mapping returns the value under key in the mapping node m, or nil when
// m is no mapping or has no such key.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mergeMaps appends the pairs of from to into; a key of both is an error.
func mergeMaps(into, from *yaml.Node) error {
	if from == nil {
		return nil
	}
	if into == nil || into.Kind != yaml.MappingNode || from.Kind != yaml.MappingNode {
		return errors.New("nmauthd's part adds to a section the library's document lacks")
	}
	for i := 0; i+1 < len(from.Content); i += 2 {
		if mapping(into, from.Content[i].Value) != nil {
			return fmt.Errorf("%q is in both documents", from.Content[i].Value)
		}
	}
	into.Content = append(into.Content, from.Content...)
	return nil
}

// serveOpenAPI answers GET /openapi.yaml with nmauthd's OpenAPI document of
// the wire profile it serves, for client authors and their tools.
func serveOpenAPI(wire nmauth.WireProfile) http.HandlerFunc {
	doc := openAPI(wire)
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/yaml")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(doc)
	}
}
