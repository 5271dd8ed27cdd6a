package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// replica is one nmauthd serve process. Its address changes when it is
// started again.
type replica struct {
	id  int
	bin string
	dsn string
	env []string
	dir string

	mu   sync.Mutex
	cmd  *exec.Cmd
	url  string
	log  *bytes.Buffer // every line the process wrote to stderr, all lives
	done chan struct{}
}

// start runs the replica and waits until it listens.
func (r *replica) start() error {
	cmd := exec.Command(r.bin, "serve", "--addr", "127.0.0.1:0", "--db", r.dsn, "--log-json",
		"--trusted-proxy", "127.0.0.0/8")
	cmd.Dir, cmd.Env = r.dir, r.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			r.mu.Lock()
			r.log.Write(line)
			r.log.WriteByte('\n')
			r.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		cmd.Wait()
		close(done)
	}()
	select {
	case a := <-addr:
		r.mu.Lock()
		r.cmd, r.url, r.done = cmd, "http://"+a, done
		r.mu.Unlock()
		return nil
	case <-done:
		return fmt.Errorf("replica %d exited at start:\n%s", r.id, r.logText())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return fmt.Errorf("replica %d did not listen within 30 s", r.id)
	}
}

// base is the replica's current URL, "" while it is down.
func (r *replica) base() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// kill9 kills the replica with SIGKILL and waits for it to be gone.
func (r *replica) kill9() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.url = ""
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

func (r *replica) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// errorLines counts the lines the replica logged at level ERROR.
func (r *replica) errorLines() int {
	return strings.Count(r.logText(), `"level":"ERROR"`)
}

// database is the PostgreSQL cluster the replicas share, which the
// harness restarts, pauses and cuts off.
type database struct {
	dsn     string
	version string // "15"
	cluster string // "nmauthchaos"
	db      *sql.DB
}

func (d *database) ctl(action string) error {
	out, err := exec.Command("pg_ctlcluster", d.version, d.cluster, action, "-m", "fast").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %s: %v: %s", action, err, out)
	}
	return nil
}

// restart stops the server (fast: every session is ended) and starts it.
func (d *database) restart() error { return d.ctl("restart") }

// processes are the pids of the cluster: its postmaster and every process
// whose parent it is.
func (d *database) processes() ([]int, error) {
	b, err := os.ReadFile(filepath.Join("/var/lib/postgresql", d.version, d.cluster, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	master, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{master}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent pid is the second field after the command in parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// signal sends sig to every process of the cluster.
func (d *database) signal(sig syscall.Signal) error {
	pids, err := d.processes()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

// dropConnections ends every session of the replicas' role but the
// harness's own.
func (d *database) dropConnections(ctx context.Context) (int, error) {
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// hostFailures reads the stored password failures of the hosts whose id
// starts with prefix.
func (d *database) hostFailures(ctx context.Context, prefix string) (map[string]int, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, password_failures FROM nmauth_hosts WHERE id LIKE $1`, prefix+"%")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// resetSchema drops every table of the database, so that each run starts
// empty.
func (d *database) resetSchema(ctx context.Context) error {
	_, err := d.db.ExecContext(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	return err
}

// runAdmin runs one nmauthd admin command against the database.
func runAdmin(bin, dsn, dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command(bin, append(args, "--db", dsn)...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	err := cmd.Run()
	return out.String(), err
}
