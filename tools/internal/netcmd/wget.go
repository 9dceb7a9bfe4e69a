package netcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/internal/guest/gnet"
	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// wget's exit codes.
const (
	wgetGeneric  = 1
	wgetParse    = 2
	wgetIO       = 3
	wgetNetwork  = 4
	wgetSSL      = 5
	wgetProtocol = 7
	wgetServer   = 8
)

type wgetOpts struct {
	quiet, serverResp, noCheck bool
	output, prefix, method     string
	body                       *string
	headers                    []string
	agent, user, password      string
	timeout                    time.Duration
	tries                      int
	urls                       []string
}

func wgetMain(e *cmd.Env) int {
	o := &wgetOpts{tries: 1}
	args := e.Args[1:]
	need := func(i *int, a string) (string, bool) {
		if k := strings.IndexByte(a, '='); strings.HasPrefix(a, "--") && k >= 0 {
			return a[k+1:], true
		}
		if *i+1 >= len(args) {
			fmt.Fprintf(e.Stderr, "wget: option requires an argument -- '%s'\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.\n", strings.TrimLeft(a, "-"))
			return "", false
		}
		*i++
		return args[*i], true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := a
		if strings.HasPrefix(a, "--") {
			if k := strings.IndexByte(a, '='); k >= 0 {
				name = a[:k]
			}
		} else if strings.HasPrefix(a, "-") && len(a) > 2 {
			// -qO-, -O FILE, -OFILE
			if strings.IndexByte("OPTtU", a[1]) >= 0 {
				args = append(args[:i+1], append([]string{a[2:]}, args[i+1:]...)...)
				name, a = a[:2], a[:2]
			} else {
				rest := "-" + a[2:]
				args = append(args[:i+1], append([]string{rest}, args[i+1:]...)...)
				name, a = a[:2], a[:2]
			}
		}
		var v string
		ok := true
		switch name {
		case "-q", "--quiet":
			o.quiet = true
		case "-nv", "--no-verbose", "-v", "--verbose", "-c", "--continue", "-N", "--timestamping":
		case "-S", "--server-response":
			o.serverResp = true
		case "--no-check-certificate":
			o.noCheck = true
		case "-O", "--output-document":
			o.output, ok = need(&i, a)
		case "-P", "--directory-prefix":
			o.prefix, ok = need(&i, a)
		case "--header":
			v, ok = need(&i, a)
			o.headers = append(o.headers, v)
		case "--method":
			o.method, ok = need(&i, a)
		case "--post-data", "--body-data":
			v, ok = need(&i, a)
			o.body = &v
			if name == "--post-data" && o.method == "" {
				o.method = "POST"
			}
		case "--post-file", "--body-file":
			v, ok = need(&i, a)
			if ok {
				b, err := os.ReadFile(v)
				if err != nil {
					fmt.Fprintf(e.Stderr, "wget: %s: %v\n", v, err)
					return wgetIO
				}
				s := string(b)
				o.body = &s
				if name == "--post-file" && o.method == "" {
					o.method = "POST"
				}
			}
		case "-U", "--user-agent":
			o.agent, ok = need(&i, a)
		case "--user", "--http-user":
			o.user, ok = need(&i, a)
		case "--password", "--http-password":
			o.password, ok = need(&i, a)
		case "-T", "--timeout":
			v, ok = need(&i, a)
			if ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					fmt.Fprintf(e.Stderr, "wget: --timeout: Invalid time period '%s'\n", v)
					return wgetParse
				}
				o.timeout = time.Duration(f * float64(time.Second))
			}
		case "-t", "--tries":
			v, ok = need(&i, a)
			if ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					fmt.Fprintf(e.Stderr, "wget: --tries: Invalid number '%s'\n", v)
					return wgetParse
				}
				o.tries = max(n, 1)
			}
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				fmt.Fprintf(e.Stderr, "wget: unrecognized option '%s'\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.\n", a)
				return wgetParse
			}
			o.urls = append(o.urls, a)
		}
		if !ok {
			return wgetParse
		}
	}
	if len(o.urls) == 0 {
		fmt.Fprintln(e.Stderr, "wget: missing URL\nUsage: wget [OPTION]... [URL]...\n\nTry `wget --help' for more options.")
		return wgetGeneric
	}
	if o.noCheck && !o.quiet {
		fmt.Fprintln(e.Stderr, "WARNING: --no-check-certificate has no effect: the wasmbox host verifies TLS")
	}
	status := 0
	for _, u := range o.urls {
		var st int
		for try := 0; try < o.tries; try++ {
			if st = wgetOne(e, o, u); st == 0 || st == wgetServer || st == wgetIO || st == wgetParse {
				break
			}
		}
		if st != 0 {
			status = st
		}
	}
	return status
}

func wgetOne(e *cmd.Env, o *wgetOpts, raw string) int {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		fmt.Fprintf(e.Stderr, "%s: Unsupported scheme or invalid URL.\n", raw)
		return wgetGeneric
	}
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	method := "GET"
	if o.method != "" {
		method = strings.ToUpper(o.method)
	}
	var body io.Reader
	if o.body != nil {
		body = strings.NewReader(*o.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		fmt.Fprintf(e.Stderr, "%s: Invalid URL.\n", raw)
		return wgetGeneric
	}
	req.Header.Set("User-Agent", "Wget/1.21.3")
	req.Header.Set("Accept", "*/*")
	if o.body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if o.agent != "" {
		req.Header.Set("User-Agent", o.agent)
	}
	if o.user != "" || o.password != "" {
		req.SetBasicAuth(o.user, o.password)
	}
	for _, h := range o.headers {
		if i := strings.IndexAny(h, "\r\n"); i >= 0 {
			h = h[:i]
		}
		name, val, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(e.Stderr, "wget: --header: Invalid header '%s'.\n", h)
			return wgetParse
		}
		if strings.EqualFold(strings.TrimSpace(name), "Host") {
			req.Host = strings.TrimSpace(val)
			continue
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(val))
	}
	if !o.quiet {
		fmt.Fprintf(e.Stderr, "--%s--  %s\n", time.Now().UTC().Format("2006-01-02 15:04:05"), u)
	}
	client := &http.Client{Transport: transport(), CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 20 {
			return errors.New("20 redirections exceeded.")
		}
		return nil
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return wgetNetErr(e, o, u, ctx, err)
	}
	defer resp.Body.Close()
	if !o.quiet {
		fmt.Fprintf(e.Stderr, "HTTP request sent, awaiting response... %s\n", resp.Status)
	}
	if o.serverResp {
		fmt.Fprintf(e.Stderr, "  %s %s\n", resp.Proto, resp.Status)
		for k, vs := range resp.Header {
			for _, v := range vs {
				fmt.Fprintf(e.Stderr, "  %s: %s\n", k, v)
			}
		}
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintf(e.Stderr, "%s ERROR %d: %s.\n", time.Now().UTC().Format("2006-01-02 15:04:05"), resp.StatusCode, strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode))))
		return wgetServer
	}
	name := o.output
	if name == "" {
		name = path.Base(resp.Request.URL.Path)
		if name == "/" || name == "." || name == "" {
			name = "index.html"
		}
		if o.prefix != "" {
			name = filepath.Join(o.prefix, name)
		}
	}
	var out io.Writer = e.Stdout
	if name != "-" {
		if dir := filepath.Dir(name); o.prefix != "" {
			os.MkdirAll(dir, 0o755)
		}
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintf(e.Stderr, "%s: %v\n", name, errors.Unwrap(err))
			return wgetIO
		}
		defer f.Close()
		out = f
	}
	n, err := io.Copy(out, resp.Body)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			fmt.Fprintf(e.Stderr, "Cannot write to '%s' (%v).\n", name, pe.Err)
			return wgetIO
		}
		return wgetNetErr(e, o, u, ctx, err)
	}
	if !o.quiet && name != "-" {
		fmt.Fprintf(e.Stderr, "%s - '%s' saved [%d]\n\n", time.Now().UTC().Format("2006-01-02 15:04:05"), name, n)
	}
	return 0
}

func wgetNetErr(e *cmd.Env, o *wgetOpts, u *url.URL, ctx context.Context, err error) int {
	var ne *netError
	if ctx.Err() != nil {
		fmt.Fprintln(e.Stderr, "Read error (Connection timed out).")
		return wgetNetwork
	}
	if !asNetError(err, &ne) {
		fmt.Fprintf(e.Stderr, "wget: %v\n", err)
		return wgetNetwork
	}
	switch ne.Kind {
	case gnet.NetResolve:
		fmt.Fprintf(e.Stderr, "wget: unable to resolve host address '%s'\n", u.Hostname())
	case gnet.NetConnect:
		fmt.Fprintf(e.Stderr, "Connecting to %s... failed: Connection refused.\n", u.Host)
	case gnet.NetTLS:
		fmt.Fprintln(e.Stderr, ne.Msg)
		return wgetSSL
	case gnet.NetTimeout:
		fmt.Fprintln(e.Stderr, "Read error (Connection timed out).")
	default:
		fmt.Fprintln(e.Stderr, ne.Msg)
		if ne.Kind == gnet.NetRequest || ne.Kind == gnet.NetResponse {
			return wgetProtocol
		}
	}
	return wgetNetwork
}
