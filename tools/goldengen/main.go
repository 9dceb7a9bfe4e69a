// Command goldengen regenerates the expectations of the golden test cases
// under tools/testdata/golden from the real GNU tools of this machine.
//
// For every case without a "-- manual --" section it recreates the host
// directory /tmp/golden with the case's files, runs the GNU command there
// as the unprivileged user nobody (when goldengen itself runs as root, so
// that a case can never change the machine: "date -s" sets the clock)
// with a clean C-locale environment (LC_ALL=C TZ=UTC HOME=/home/user
// USER=user PATH=/bin:/usr/bin) and the case's stdin, and rewrites the
// case's stdout, stderr and exit sections, and its "want: PATH" sections
// with the files' contents after the run. The command is the name of the
// case's directory; awk runs gawk (Debian's awk is mawk), with argv[0]
// still "awk" so messages name it the way ours do.
//
// Usage (from anywhere in the module):
//
//	go run ./tools/goldengen [-run REGEXP] [-n]
//
// -run selects cases by "COMMAND/CASE" (the path under the golden
// directory without .txtar); -n reports what would change without writing.
// The Debian packages it needs are listed in tools/testdata/golden/README.md
// (`make golden` installs them and runs this program).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GoldenDir is where the cases live, relative to the module root.
const GoldenDir = "tools/testdata/golden"

// caseDir is the directory every case runs in, on the host and in the
// sandbox alike, so that paths in messages agree.
const caseDir = "/tmp/golden"

// hostTools maps a command to the host program that is its reference.
var hostTools = map[string]string{"awk": "gawk"}

func main() {
	os.Exit(doMain(os.Args[1:], os.Stdout, os.Stderr))
}

func doMain(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("goldengen", flag.ContinueOnError)
	fset.SetOutput(stderr)
	run := fset.String("run", "", "only cases whose COMMAND/CASE matches this `regexp`")
	dry := fset.Bool("n", false, "report changes without writing")
	if err := fset.Parse(args); err != nil {
		return 2
	}
	re, err := regexp.Compile(*run)
	if err != nil {
		fmt.Fprintln(stderr, "goldengen: -run:", err)
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, "goldengen:", err)
		return 1
	}
	dir := filepath.Join(root, GoldenDir)
	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txtar") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if name := strings.TrimSuffix(filepath.ToSlash(rel), ".txtar"); re.MatchString(name) {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "goldengen:", err)
		return 1
	}
	status, changed, manual := 0, 0, 0
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name)+".txtar")
		old, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "goldengen:", err)
			status = 1
			continue
		}
		c, err := parseGolden(old)
		if err != nil {
			fmt.Fprintf(stderr, "goldengen: %s: %v\n", name, err)
			status = 1
			continue
		}
		if _, ok := c.Get("manual"); ok {
			manual++
			continue
		}
		command, _, _ := strings.Cut(name, "/")
		if err := regenerate(c, command); err != nil {
			fmt.Fprintf(stderr, "goldengen: %s: %v\n", name, err)
			status = 1
			continue
		}
		out := c.Format()
		if bytes.Equal(out, old) {
			continue
		}
		changed++
		fmt.Fprintf(stdout, "updated %s\n", name)
		if !*dry {
			if err := os.WriteFile(p, out, 0o644); err != nil {
				fmt.Fprintln(stderr, "goldengen:", err)
				status = 1
			}
		}
	}
	fmt.Fprintf(stdout, "%d cases, %d updated, %d manual\n", len(names), changed, manual)
	return status
}

// regenerate runs the reference tool for c and replaces its expectations.
func regenerate(c *goldenCase, command string) error {
	args, err := c.Args()
	if err != nil {
		return fmt.Errorf("args: %v", err)
	}
	if err := os.RemoveAll(caseDir); err != nil {
		return err
	}
	if err := os.MkdirAll(caseDir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(caseDir)
	if err := c.WriteFiles(caseDir); err != nil {
		return err
	}
	tool := command
	if t, ok := hostTools[command]; ok {
		tool = t
	}
	path, err := exec.LookPath(tool)
	if err != nil {
		return fmt.Errorf("reference tool %s: %v (see %s/README.md)", tool, err, GoldenDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x := exec.CommandContext(ctx, path)
	x.Args = append([]string{command}, args...)
	x.Env = []string{"LC_ALL=C", "TZ=UTC", "HOME=/home/user", "USER=user", "PATH=/bin:/usr/bin", "PWD=" + caseDir}
	x.Dir = caseDir
	if os.Geteuid() == 0 {
		// Never run a reference tool as root: a case like "date -s" would
		// set the machine's clock. The case directory is handed to the
		// unprivileged user for the run.
		if err := chownTree(caseDir, nobody, nobody); err != nil {
			return err
		}
		x.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	stdin, _ := c.Get("stdin")
	x.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	exit := 0
	if err := x.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ctx.Err() != nil {
			return fmt.Errorf("running %s: %v", tool, err)
		}
		exit = ee.ExitCode()
	}
	var wants []goldenSection
	for _, w := range c.Wants() {
		data, err := os.ReadFile(filepath.Join(caseDir, filepath.FromSlash(w.Name)))
		if err != nil {
			return fmt.Errorf("want: %v", err)
		}
		wants = append(wants, goldenSection{Name: "want: " + w.Name, Data: data})
	}
	// Rebuild in the canonical order: args, stdin, files, stdout, stderr,
	// exit, wants.
	var secs []goldenSection
	for _, s := range c.Sections {
		if k, _, _ := strings.Cut(s.Name, ": "); k == "args" || k == "stdin" || k == "file" {
			secs = append(secs, s)
		}
	}
	secs = append(secs,
		goldenSection{Name: "stdout", Data: stdout.Bytes()},
		goldenSection{Name: "stderr", Data: stderr.Bytes()},
		goldenSection{Name: "exit", Data: []byte(strconv.Itoa(exit) + "\n")})
	c.Sections = append(secs, wants...)
	return nil
}

// nobody is the unprivileged user the reference tools run as when
// goldengen runs as root.
const nobody = 65534

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = parent
	}
}
