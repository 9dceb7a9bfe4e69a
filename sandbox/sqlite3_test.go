package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/wasm"
)

// sqlite3Sandbox returns a sandbox, skipping the test when SQLite's shell
// is not built into this binary (make python).
func sqlite3Sandbox(t *testing.T, opts ...Option) *Sandbox {
	t.Helper()
	if _, ok := wasm.SQLite3(); !ok {
		t.Skip("wasm/python/sqlite3.wasm is not built (make python)")
	}
	return newSandbox(t, opts...)
}

// TestSQLite3Persists: a database written by one command (one Run) is a
// file of the sandbox that the next command reads, relative names resolve
// in the working directory, and a finished write leaves no journal.
func TestSQLite3Persists(t *testing.T) {
	sb := sqlite3Sandbox(t)
	res := run(t, sb, `sqlite3 /tmp/db 'create table t(a); insert into t values(1)'`)
	if res.ExitCode != 0 || res.Stdout != "" || res.Stderr != "" {
		t.Fatalf("create: %+v", res)
	}
	res = run(t, sb, `sqlite3 /tmp/db 'select * from t'`)
	wantEqual(t, res.Stdout, "1\n")
	if res.ExitCode != 0 || res.Stderr != "" {
		t.Fatalf("select: %+v", res)
	}
	res = run(t, sb, `cd /tmp && echo 'insert into t values(2);' | sqlite3 db && sqlite3 -csv ./db 'select count(*), sum(a) from t' && ls /tmp`)
	wantEqual(t, res.Stdout, "2,3\ndb\n")
	res = run(t, sb, `sqlite3 /tmp/db '.tables'; sqlite3 -readonly /tmp/none 'select 1'; echo "status $?"; ls /tmp`)
	wantEqual(t, res.Stdout, "t\nstatus 1\ndb\n")
	wantEqual(t, res.Stderr, "Error: unable to open database \"/tmp/none\": unable to open database file\n")
}

// TestSQLite3KilledAtDeadline: a recursive CTE that never ends is killed
// at the run's deadline, inside a transaction. As after a kill -9 of
// Debian's sqlite3 (checked on the host): the journal stays, the next
// reader sees the database as it was, and the next writer removes it.
func TestSQLite3KilledAtDeadline(t *testing.T) {
	sb := sqlite3Sandbox(t, WithTimeout(3*time.Second))
	res := run(t, sb, `sqlite3 /tmp/db 'create table t(a); insert into t values(1)'`)
	if res.ExitCode != 0 {
		t.Fatalf("create: %+v", res)
	}
	res = run(t, sb, `sqlite3 /tmp/db 'begin; insert into t values(2); delete from t where a = 1; with recursive c(x) as (select 1 union all select x+1 from c) select count(*) from c'`)
	if res.ErrorClass != ClassTimeout || res.ExitCode != 124 {
		t.Fatalf("endless CTE: %+v; want TIMEOUT", res)
	}
	res = run(t, sb, `ls /tmp; sqlite3 /tmp/db 'select * from t; pragma integrity_check'; sqlite3 /tmp/db 'insert into t values(3); select * from t'; ls /tmp`)
	wantEqual(t, res.Stdout, "db\ndb-journal\n1\nok\n1\n3\ndb\n")
}

// TestSQLite3MemoryLimit: group_concat over an endless recursive CTE grows
// one string until the command's memory limit refuses it; the shell ends
// there with the one-line memory error and status 137 (not at the
// deadline: SQLite alone would keep stepping with its accumulator in
// error). A watchdog fails the test if the host grows past 1 GiB.
func TestSQLite3MemoryLimit(t *testing.T) {
	sb := sqlite3Sandbox(t, WithLimits(Limits{MemoryPerCommand: 16 << 20, Timeout: 60 * time.Second}))
	ctx := hostMemoryWatchdog(t, 1<<30)
	res, err := sb.Run(ctx, `sqlite3 :memory: 'with recursive c(x) as (select 1 union all select x+1 from c) select group_concat(x) from c'; echo "status $?"`)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the host went past 1 GiB")
	}
	wantEqual(t, res.Stdout, "status 137\n")
	wantEqual(t, res.Stderr, "wasmbox: sqlite3: memory limit (16 MiB) exceeded\n")
	if strings.Contains(res.Stderr, "out of memory") {
		t.Errorf("the guest's own report leaked: %q", res.Stderr)
	}
}
