package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth"
)

// Exit statuses: bad input and failures are 1, a malformed command line 2.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// cli is one run of the program with its standard streams and
// environment, so tests can run it in process.
type cli struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	log    *slog.Logger
	// logOut is where log lines go: batched to stderr by one goroutine.
	logOut *logWriter
}

func newCLI() *cli {
	return &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
}

// options holds every flag; each command accepts only some of them.
type options struct {
	addr        string
	metricsAddr string
	db          string
	dev         bool
	demoPage    bool
	logJSON     bool
	logLevel    string
	accessLog   bool
	mac         string
	wire        string
	// corsOrigins, networks and trustedProxies may be given more than
	// once.
	corsOrigins    stringList
	networks       stringList
	trustedProxies prefixList
	set            map[string]bool // flags given on the command line

	// The relying party of passkeys (see passkeys.go).
	passkeyRPID    string
	passkeyOrigins stringList
	passwordless   bool

	// Single sign-on (see sso.go).
	ssoIssuer, ssoClientID, ssoRedirectURL, ssoGroup string
	ssoCreateUsers, ssoPublicClient                  bool
	ssoDomains                                       stringList

	// An access token's expiry and scope (see tokens.go).
	expires  string
	readOnly bool

	// An enrollment key's limits and labels, the server its Netmaker
	// token names, and the server config of a join's answer (see
	// enrollkeys.go).
	uses                 int
	unlimited            bool
	tags                 stringList
	server               string
	netmakerServerConfig string

	// repair makes check repair what it finds (see check.go).
	repair bool

	// allowWeakMasterKey accepts a master key that is long enough but
	// does not read as random (see masterkey.go).
	allowWeakMasterKey bool

	// The connection caps (see connlimit.go).
	maxConns, maxConnsPerGroup int

	// An import's source and mode (see import.go).
	from   string
	dryRun bool

	// Netmaker's database, served in front of (see netmakerfront.go),
	// and the tokens' lifetimes.
	netmakerDB            string
	userTokenTTL, hostTTL time.Duration
}

// stringList is a flag that may be given more than once.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// command is one subcommand: its words, its positional arguments and the
// flags it takes besides the common --db and --log-json.
type command struct {
	name  string
	args  []string
	flags []string
	help  string
	run   func(ctx context.Context, c *cli, o *options, args []string) error
}

var commands = []command{
	{name: "serve", flags: []string{"addr", "access-log", "dev", "demo-page", "wire", "cors-origin", "metrics-addr", "trusted-proxy", "passkey-rp-id", "passkey-origin", "passwordless",
		"max-conns", "max-conns-per-group", "allow-weak-master-key", "sso-issuer", "sso-client-id", "sso-redirect-url", "sso-create-users", "sso-domain", "sso-group", "sso-public-client",
		"netmaker-server-config", "netmaker-db", "user-token-ttl", "host-token-ttl"}, run: serve,
		help: "serve the API (--addr, --access-log, --dev, --demo-page, --wire, --cors-origin, --metrics-addr, --trusted-proxy, --passkey-rp-id, --passkey-origin, --passwordless, --max-conns, --max-conns-per-group, --allow-weak-master-key, --sso-*, --netmaker-server-config, --netmaker-db, --user-token-ttl, --host-token-ttl)"},
	{name: "user add", args: []string{"NAME"}, run: userAdd,
		help: "add a user; password from stdin, or prompted on a terminal"},
	{name: "user list", run: userList,
		help: "list users: name, disabled, TOTP on"},
	{name: "user passwd", args: []string{"NAME"}, run: userPasswd,
		help: "set the user's password from stdin, or prompted; revokes the user's tokens"},
	{name: "user disable", args: []string{"NAME"}, run: userDisable,
		help: "refuse the user's logins and revoke the user's tokens"},
	{name: "user totp-reset", args: []string{"NAME"}, run: userTOTPReset,
		help: "turn the user's TOTP off so the user can enroll again"},
	{name: "user passkeys", args: []string{"NAME"}, run: userPasskeys,
		help: "list the user's passkeys: name, creation, last use, sign count"},
	{name: "user passkeys-reset", args: []string{"NAME"}, run: userPasskeysReset,
		help: "remove all of the user's passkeys and revoke the user's tokens"},
	{name: "user sso-link", args: []string{"NAME", "ISSUER", "SUBJECT"}, run: userSSOLink,
		help: "let the identity SUBJECT of the OpenID provider ISSUER log in as the user by single sign-on"},
	{name: "host add", args: []string{"ID"}, flags: []string{"mac", "network"}, run: hostAdd,
		help: "add a host (--mac, --network); password from stdin, or generated and printed"},
	{name: "host import", flags: []string{"dry-run"}, run: hostImport,
		help: "add hosts from stdin, one a line: JSON {id, mac, password_hash|password, disabled, networks}, or \"ID PASSWORD [MAC]\"; --dry-run"},
	{name: "user import", flags: []string{"dry-run"}, run: userImport,
		help: "add users from stdin, one JSON {name, password_hash|password, totp_secret, disabled} a line; --dry-run"},
	{name: "import netmaker", flags: []string{"from", "dry-run", "sso-issuer"}, run: importNetmaker,
		help: "import the users, hosts and memberships of Netmaker's database (--from PATH|postgres://…, read only; --dry-run; --sso-issuer)"},
	{name: "host list", run: hostList,
		help: "list hosts: id, disabled, MAC address"},
	{name: "token create", args: []string{"USER", "NAME"}, flags: []string{"expires", "read-only", "network"}, run: tokenCreate,
		help: "make an access token for the user and print it once (--expires RFC3339|720h|90d, --read-only, --network)"},
	{name: "token list", args: []string{"USER"}, run: tokenList,
		help: "list the user's access tokens: id, name, scope, expiry, last use; never their secrets"},
	{name: "token delete", args: []string{"ID"}, run: tokenDelete,
		help: "revoke an access token"},
	{name: "enrollment-key create", args: []string{"NAME"}, flags: []string{"uses", "unlimited", "expires", "network", "tag", "server"}, run: enrollKeyCreate,
		help: "make an enrollment key and print it once (--uses N or --unlimited, --expires RFC3339|720h|90d, --network, --tag; --server HOST also prints the token netclient join -t takes)"},
	{name: "enrollment-key list", run: enrollKeyList,
		help: "list enrollment keys: id, name, networks, uses, expiry, revocation; never their secrets"},
	{name: "enrollment-key revoke", args: []string{"ID"}, run: enrollKeyRevoke,
		help: "stop an enrollment key admitting joins; it stays listed, marked, until deleted"},
	{name: "enrollment-key delete", args: []string{"ID"}, run: enrollKeyDelete,
		help: "delete an enrollment key; the hosts that joined with it stay"},
	{name: "reseal", run: reseal,
		help: "seal every TOTP secret under the first root secret"},
	{name: "check", flags: []string{"repair"}, run: check,
		help: "list the records the database cannot decode (--repair: reset each broken column to a safe value)"},
}

// commonFlags are accepted by every command.
var commonFlags = []string{"db", "log-json", "log-level"}

func (c *cli) run(args []string) int {
	o, words, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		c.usage(c.stdout)
		return exitOK
	}
	var cmd *command
	var rest []string
	if err == nil {
		cmd, rest, err = findCommand(words)
	}
	if err == nil {
		err = cmd.checkFlags(o)
	}
	var level slog.Level
	if err == nil {
		if lerr := level.UnmarshalText([]byte(o.logLevel)); lerr != nil {
			err = fmt.Errorf("--log-level: %q is none of debug, info, warn, error", o.logLevel)
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "nmauthd: %s (see nmauthd --help)\n", oneLine(err))
		return exitUsage
	}
	resolveDB(o, c.getenv)
	secrets := newRedactor(o.db, c.getenv)
	secrets.merge(newRedactor(o.from, c.getenv))
	c.logOut = newLogWriter(c.stderr)
	c.log = secrets.logger(newLogger(c.logOut, o.logJSON, level))
	c.logOut.report = func(n uint64) {
		c.log.Warn("log lines dropped: the log's output did not keep up", "lines", n)
	}
	ctx := context.Background()
	if cmd.name != "serve" {
		// Whoever runs an admin command holds the database, as the master
		// key's holder does: its audit events name the master key.
		ctx = nmauth.WithActor(ctx, master)
	}
	err = cmd.run(ctx, c, o, rest)
	c.logOut.Close()
	if err != nil {
		fmt.Fprintf(c.stderr, "nmauthd: %s\n", secrets.line(err))
		return exitFail
	}
	return exitOK
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("nmauthd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8081", "address to listen on")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "address of a separate listener for Prometheus metrics at /metrics; none when empty")
	fs.StringVar(&o.db, "db", "nmauth.db", "SQLite database path, or PostgreSQL: a postgres:// URL or a key=value DSN; else $NMAUTH_DB")
	fs.BoolVar(&o.dev, "dev", false, "development mode: loopback only, default master key allowed, demo accounts")
	fs.BoolVar(&o.demoPage, "demo-page", false, "serve the demo page at / without --dev (--dev always serves it)")
	fs.BoolVar(&o.logJSON, "log-json", false, "write logs as JSON lines")
	fs.StringVar(&o.logLevel, "log-level", "info", "the least level logged: debug (adds every right host and node login), info, warn or error")
	fs.BoolVar(&o.accessLog, "access-log", false, "log one line per request")
	fs.StringVar(&o.mac, "mac", "", "the host's MAC address")
	fs.StringVar(&o.wire, "wire", "spec", "answer in the spec's format (spec) or Netmaker's (netmaker)")
	fs.Var(&o.corsOrigins, "cors-origin", "let a web UI at this origin call the API; repeatable")
	fs.Var(&o.networks, "network", "a network the host is a member of, for node login, or an access token is limited to; repeatable")
	fs.Var(&o.trustedProxies, "trusted-proxy", "address or CIDR of a reverse proxy whose X-Forwarded-For names the client; repeatable, else $NMAUTH_TRUSTED_PROXIES")
	fs.StringVar(&o.passkeyRPID, "passkey-rp-id", "", "serve passkeys for this relying party id, the domain of the page (with --dev: localhost)")
	fs.Var(&o.passkeyOrigins, "passkey-origin", "an origin of the pages that use passkeys (default https://RP-ID); repeatable")
	fs.BoolVar(&o.passwordless, "passwordless", false, "let a discoverable passkey log in without password (on with --dev)")
	fs.StringVar(&o.expires, "expires", "", "when the access token expires: an RFC 3339 time, or a lifetime such as 720h or 90d (default 90d)")
	fs.BoolVar(&o.readOnly, "read-only", false, "limit the access token to reads")
	fs.StringVar(&o.from, "from", "", "the database an import reads: a SQLite path, or a postgres:// URL")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what an import would do, and write nothing")
	fs.StringVar(&o.ssoIssuer, "sso-issuer", "", "log users in through this OpenID provider (client secret in $NMAUTH_SSO_CLIENT_SECRET)")
	fs.StringVar(&o.ssoClientID, "sso-client-id", "", "this server's client id at the OpenID provider")
	fs.StringVar(&o.ssoRedirectURL, "sso-redirect-url", "", "this server's callback as the provider knows it: https://HOST/api/oauth/callback")
	fs.BoolVar(&o.ssoCreateUsers, "sso-create-users", false, "make a user at the first SSO login of an identity linked to none")
	fs.Var(&o.ssoDomains, "sso-domain", "admit only verified e-mails of this domain; repeatable")
	fs.StringVar(&o.ssoGroup, "sso-group", "", "admit only identities whose groups claim holds this group")
	fs.BoolVar(&o.ssoPublicClient, "sso-public-client", false, "the client is public at the provider: no secret, PKCE only (else $NMAUTH_SSO_CLIENT_SECRET is required)")
	fs.IntVar(&o.uses, "uses", 0, "how many hosts may join with the enrollment key")
	fs.BoolVar(&o.unlimited, "unlimited", false, "let any number of hosts join with the enrollment key")
	fs.Var(&o.tags, "tag", "a tag of the enrollment key; repeatable")
	fs.StringVar(&o.server, "server", "", "the API host that the enrollment key's Netmaker token names, as netclient dials it")
	fs.StringVar(&o.netmakerServerConfig, "netmaker-server-config", "", "a JSON object file: the server_config of the answer of a host join")
	fs.BoolVar(&o.allowWeakMasterKey, "allow-weak-master-key", false, "accept a master key of 32 characters or more that does not read as random, with a warning")
	fs.IntVar(&o.maxConns, "max-conns", 0, "the most client connections open at once; 0: the file limit less 128, at most 16384")
	fs.IntVar(&o.maxConnsPerGroup, "max-conns-per-group", defaultMaxConnsPerGroup, "the most connections open at once from one IPv4 /24 or IPv6 /56; a trusted proxy's count against --max-conns only")
	fs.StringVar(&o.netmakerDB, "netmaker-db", "", "serve in front of an unchanged Netmaker (with --wire netmaker): read its accounts live from its database, a SQLite path or a postgres:// URL, and sign its tokens")
	fs.DurationVar(&o.userTokenTTL, "user-token-ttl", 0, "lifetime of a user token (default 1h; with --netmaker-db Netmaker's, which it may only shorten)")
	fs.DurationVar(&o.hostTTL, "host-token-ttl", 0, "lifetime of a host token (default and most 15m)")
	fs.BoolVar(&o.repair, "repair", false, "reset each broken column that check finds to a safe value")
	return fs
}

// parseArgs accepts flags before, between and after the command's words.
// After "--" everything is a word.
func parseArgs(args []string) (*options, []string, error) {
	o := &options{set: map[string]bool{}}
	fs := newFlagSet(o)
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			words = append(words, rest...)
			break
		}
		words = append(words, rest[0])
		args = rest[1:]
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, words, nil
}

// findCommand matches the leading words against the commands and returns
// the command and its positional arguments.
func findCommand(words []string) (*command, []string, error) {
	if len(words) == 0 {
		return nil, nil, errors.New("no command given")
	}
	for i := range commands {
		cmd := &commands[i]
		name := strings.Fields(cmd.name)
		if len(words) < len(name) || !slices.Equal(words[:len(name)], name) {
			continue
		}
		rest := words[len(name):]
		if len(rest) != len(cmd.args) {
			return nil, nil, fmt.Errorf("%s takes %s", cmd.name, argsText(cmd.args))
		}
		return cmd, rest, nil
	}
	return nil, nil, fmt.Errorf("unknown command %q", strings.Join(words, " "))
}

func argsText(args []string) string {
	if len(args) == 0 {
		return "no arguments"
	}
	return strings.Join(args, " ")
}

// checkFlags refuses a flag that the command would silently ignore.
func (cmd *command) checkFlags(o *options) error {
	for name := range o.set {
		if !slices.Contains(commonFlags, name) && !slices.Contains(cmd.flags, name) {
			return fmt.Errorf("%s does not take --%s", cmd.name, name)
		}
	}
	return nil
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: nmauthd COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", strings.TrimSpace(cmd.name+" "+strings.Join(cmd.args, " ")), cmd.help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags (before or after the command):")
	var o options
	newFlagSet(&o).VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  --%-14s %s (default %q)\n", f.Name, f.Usage, f.DefValue)
	})
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment:")
	fmt.Fprintln(w, "  MASTER_KEY     the master key; else server.masterkey in config/environments/<NMAUTH_ENV>.yaml")
	fmt.Fprintln(w, "  NMAUTH_DB      the database when no --db is given, to keep a DSN's password off the command line;")
	fmt.Fprintln(w, "                 pgx also reads the PG* variables (PGPASSWORD, ...) and ~/.pgpass")
	fmt.Fprintln(w, "  NMAUTH_ENV     the environment name for that file (default dev)")
	fmt.Fprintln(w, "  NMAUTH_SECRET  root secrets, hex or base64, 32+ bytes, comma-separated, the first signs;")
	fmt.Fprintln(w, "                 without it a SQLite database gets a 0600 file <db>.secret beside it")
	fmt.Fprintln(w, "  NMAUTH_TRUSTED_PROXIES")
	fmt.Fprintln(w, "                 the reverse proxies' addresses or CIDR prefixes, comma-separated, when no")
	fmt.Fprintln(w, "                 --trusted-proxy is given (see docs/nmauthd.md, \"Behind a reverse proxy\")")
	fmt.Fprintln(w, "  NMAUTH_SSO_CLIENT_SECRET")
	fmt.Fprintln(w, "                 the client secret at the OpenID provider of --sso-issuer; required unless")
	fmt.Fprintln(w, "                 --sso-public-client")
}

// oneLine keeps an error message on one line of the terminal.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
