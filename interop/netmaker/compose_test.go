package netmaker

import (
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of a docker-compose file the test reads.
type composeFile struct {
	Services map[string]struct {
		Image       string
		Command     strList
		Environment strList
		Ports       strList
		Volumes     strList
		Networks    map[string]struct {
			IPv4Address string `yaml:"ipv4_address"`
		}
	}
	Networks map[string]struct {
		IPAM struct {
			Config []struct{ Subnet string }
		}
	}
	Volumes map[string]any
}

// strList is a compose list, which may also be written as one string or,
// for an environment, as a map (read as NAME=VALUE).
type strList []string

func (l *strList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*l = strings.Fields(n.Value)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			*l = append(*l, n.Content[i].Value+"="+n.Content[i+1].Value)
		}
	default:
		var s []string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = s
	}
	return nil
}

func readCompose(t *testing.T, file string) composeFile {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// TestComposeServiceFitsTheStack reads deploy/docker-compose.nmauthd.yml
// against Netmaker v1.4.0's own docker-compose.yml (from its module),
// deploy/Caddyfile and deploy/Containerfile: nmauthd trusts exactly
// Caddy's fixed address on a network of their own, which holds it;
// publishes no port; mounts the volume where Netmaker keeps its database,
// read only, and names the file Netmaker writes there; keeps its own data
// in the image's volume; and is the upstream the Caddyfile names.
func TestComposeServiceFitsTheStack(t *testing.T) {
	ours := readCompose(t, "../../deploy/docker-compose.nmauthd.yml")
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gravitl/netmaker").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/gravitl/netmaker: %v", err)
	}
	theirs := readCompose(t, filepath.Join(strings.TrimSpace(string(out)), "compose", "docker-compose.yml"))

	svc, ok := ours.Services["nmauthd"]
	if !ok {
		t.Fatal("no service nmauthd")
	}
	flag := func(name string) string {
		for _, c := range svc.Command {
			if v, ok := strings.CutPrefix(c, "--"+name+"="); ok {
				return v
			}
		}
		t.Errorf("nmauthd's command has no --%s=", name)
		return ""
	}
	if svc.Command[0] != "serve" || flag("wire") != "netmaker" {
		t.Errorf("command %q, want serve --wire=netmaker", svc.Command)
	}
	if len(svc.Ports) > 0 {
		t.Errorf("nmauthd publishes %q; only Caddy may reach it", svc.Ports)
	}

	// The trusted proxy is Caddy's address on the network nmauthd alone
	// shares with it.
	if len(svc.Networks) != 1 {
		t.Errorf("nmauthd is on networks %v, want one shared with Caddy only", keysOf(svc.Networks))
	}
	var netName string
	for n := range svc.Networks {
		netName = n
	}
	caddyAddr := ours.Services["caddy"].Networks[netName].IPv4Address
	if flag("trusted-proxy") != caddyAddr+"/32" {
		t.Errorf("--trusted-proxy=%s, want Caddy's address %s/32", flag("trusted-proxy"), caddyAddr)
	}
	for name, s := range ours.Services {
		if _, on := s.Networks[netName]; on && name != "nmauthd" && name != "caddy" {
			t.Errorf("service %s is on nmauthd's network", name)
		}
	}
	if _, stays := ours.Services["caddy"].Networks["default"]; !stays {
		t.Error("Caddy leaves the stack's default network, where Netmaker's services are")
	}
	cfg := ours.Networks[netName].IPAM.Config
	if len(cfg) != 1 {
		t.Fatalf("network %s has %d subnets, want one", netName, len(cfg))
	}
	subnet, err := netip.ParsePrefix(cfg[0].Subnet)
	addr, aerr := netip.ParseAddr(caddyAddr)
	if err != nil || aerr != nil || !subnet.Contains(addr) {
		t.Errorf("Caddy's address %q is not in the network's subnet %q", caddyAddr, cfg[0].Subnet)
	}

	// Netmaker's database: the volume Netmaker's own service keeps it in
	// (its server writes data/netmaker.db under its working directory,
	// /root), mounted read only, and the file in it.
	var nmMount string
	for _, v := range theirs.Services["netmaker"].Volumes {
		if m, ok := strings.CutPrefix(v, "sqldata:"); ok {
			nmMount = m
		}
	}
	if nmMount != "/root/data" {
		t.Errorf("Netmaker's service mounts sqldata at %q; docs/deploy.md says /root/data", nmMount)
	}
	var mount string
	for _, v := range svc.Volumes {
		if m, ok := strings.CutPrefix(v, "sqldata:"); ok {
			var ro bool
			mount, ro = strings.CutSuffix(m, ":ro")
			if !ro {
				t.Errorf("nmauthd mounts sqldata as %q, want read only", v)
			}
		}
	}
	if db := flag("netmaker-db"); mount == "" || db != path.Join(mount, "netmaker.db") {
		t.Errorf("--netmaker-db=%s with sqldata at %q, want the netmaker.db of that volume", db, mount)
	}
	if _, ok := theirs.Volumes["sqldata"]; !ok {
		t.Error("Netmaker's stack has no volume sqldata")
	}
	if _, ok := theirs.Services["caddy"]; !ok {
		t.Error("Netmaker's stack has no service caddy")
	}

	// nmauthd's own data: the image's volume.
	cf, err := os.ReadFile("../../deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	vol := regexp.MustCompile(`(?m)^VOLUME (\S+)$`).FindSubmatch(cf)
	if vol == nil || !slices.Contains(svc.Volumes, "nmauthd_data:"+string(vol[1])) {
		t.Errorf("nmauthd's volumes %q do not hold the image's VOLUME", svc.Volumes)
	}
	if !slices.ContainsFunc(svc.Environment, func(e string) bool { return strings.HasPrefix(e, "MASTER_KEY=${MASTER_KEY") }) {
		t.Errorf("nmauthd's environment %q does not take the stack's MASTER_KEY", svc.Environment)
	}

	// The Caddyfile's default upstream is this service at its port.
	caddyfile, err := os.ReadFile("../../deploy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(flag("addr"), ":")
	if !strings.Contains(string(caddyfile), "{$NMAUTHD_UPSTREAM:nmauthd:"+port+"}") {
		t.Errorf("deploy/Caddyfile's default upstream is not nmauthd:%s", port)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
