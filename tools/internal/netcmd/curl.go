// Package netcmd is the network commands of wasmbox, curl and wget, built
// into their own tool module (tools/net, wasm/net.wasm): net/http stays
// out of the other modules. They reach the network only through the host
// (runtime.NetABI), which applies the run's allowlist, does TLS and adds
// brokered secrets; their messages and exit codes are curl's and wget's.
package netcmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("curl", curlMain)
	cmd.Register("wget", wgetMain)
}

// curlOpts are the options of one curl run.
type curlOpts struct {
	silent, showErr, fail, failBody, location, head, include, verbose bool
	remoteName, createDirs, compressed, get, insecure                 bool
	output, method, user, agent, referer, writeOut                    string
	headers                                                           []string
	data                                                              []string // each already read ("@file" resolved)
	hasData                                                           bool
	forms                                                             []string
	maxTime                                                           time.Duration
	retry, maxRedirs                                                  int
	retryDelay                                                        time.Duration
	urls                                                              []string
}

// curlErr is a curl error: its exit code and message ("curl: (N) msg").
type curlErr struct {
	code int
	msg  string
	// raw is printed as is, whatever -s says: the host's one-line
	// refusal ("wasmbox: network: ...").
	raw bool
}

func (e *curlErr) Error() string { return e.msg }

func cerr(code int, format string, args ...any) *curlErr {
	return &curlErr{code: code, msg: fmt.Sprintf(format, args...)}
}

func curlMain(e *cmd.Env) int {
	o, err := parseCurl(e, e.Args[1:])
	if err != nil {
		var ce *curlErr
		if errors.As(err, &ce) && ce.code == 2 {
			fmt.Fprintf(e.Stderr, "curl: %s\ncurl: try 'curl --help' or 'curl --manual' for more information\n", ce.msg)
			return 2
		}
		return reportCurl(e, o, err)
	}
	if len(o.urls) == 0 {
		fmt.Fprintln(e.Stderr, "curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information")
		return 2
	}
	if o.insecure && (!o.silent || o.showErr) {
		fmt.Fprintln(e.Stderr, "Warning: -k/--insecure has no effect: the wasmbox host verifies TLS")
	}
	status := 0
	for _, u := range o.urls {
		if err := curlOne(e, o, u); err != nil {
			status = reportCurl(e, o, err)
		}
	}
	return status
}

func reportCurl(e *cmd.Env, o *curlOpts, err error) int {
	var ce *curlErr
	if !errors.As(err, &ce) {
		ce = cerr(1, "%v", err)
	}
	if ce.raw {
		fmt.Fprintln(e.Stderr, ce.msg)
	} else if o == nil || !o.silent || o.showErr {
		fmt.Fprintf(e.Stderr, "curl: (%d) %s\n", ce.code, ce.msg)
	}
	return ce.code
}

func parseCurl(e *cmd.Env, args []string) (*curlOpts, error) {
	o := &curlOpts{maxRedirs: 50, retryDelay: time.Second}
	need := func(i *int, name string) (string, error) {
		if *i+1 >= len(args) {
			return "", cerr(2, "option %s: requires parameter", name)
		}
		*i++
		return args[*i], nil
	}
	readData := func(v string, binary bool) (string, error) {
		if !strings.HasPrefix(v, "@") {
			return v, nil
		}
		var b []byte
		var err error
		if v == "@-" {
			b, err = io.ReadAll(e.Stdin)
		} else {
			b, err = os.ReadFile(v[1:])
		}
		if err != nil {
			return "", cerr(26, "Failed to open/read local data from file/application")
		}
		if !binary {
			b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r"), nil), []byte("\n"), nil)
		}
		return string(b), nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.urls = append(o.urls, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.urls = append(o.urls, a)
			continue
		}
		var longs []string
		if strings.HasPrefix(a, "--") {
			longs = []string{a}
		} else {
			// Bundled short options: -sSL, -o FILE, -oFILE.
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte("oXHdFuwmAeT", c) >= 0 && j+1 < len(a) {
					longs = append(longs, "-"+string(c))
					args = append(args[:i+1], append([]string{a[j+1:]}, args[i+1:]...)...)
					break
				}
				longs = append(longs, "-"+string(c))
			}
		}
		for _, l := range longs {
			var v string
			var err error
			switch l {
			case "-s", "--silent":
				o.silent = true
			case "-S", "--show-error":
				o.showErr = true
			case "-f", "--fail":
				o.fail = true
			case "--fail-with-body":
				o.fail, o.failBody = true, true
			case "-L", "--location":
				o.location = true
			case "-I", "--head":
				o.head = true
			case "-i", "--include":
				o.include = true
			case "-v", "--verbose":
				o.verbose = true
			case "-O", "--remote-name":
				o.remoteName = true
			case "--create-dirs":
				o.createDirs = true
			case "--compressed":
				o.compressed = true
			case "-G", "--get":
				o.get = true
			case "-k", "--insecure":
				o.insecure = true
			case "-#", "--progress-bar", "--no-progress-meter", "-N", "--no-buffer", "-g", "--globoff", "--http1.1", "-q", "--disable":
			case "-o", "--output":
				o.output, err = need(&i, l)
			case "-X", "--request":
				o.method, err = need(&i, l)
			case "-H", "--header":
				v, err = need(&i, l)
				if err == nil && strings.HasPrefix(v, "@") {
					var b []byte
					if b, err = os.ReadFile(v[1:]); err != nil {
						err = cerr(26, "Failed to open/read local data from file/application")
					}
					for _, line := range strings.Split(string(b), "\n") {
						if line = strings.TrimRight(line, "\r"); line != "" {
							o.headers = append(o.headers, line)
						}
					}
				} else if err == nil {
					o.headers = append(o.headers, v)
				}
			case "-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode", "--json":
				v, err = need(&i, l)
				if err == nil {
					switch l {
					case "--data-raw":
					case "--data-urlencode":
						v = urlencodeData(v)
					default:
						v, err = readData(v, l == "--data-binary" || l == "--json")
					}
				}
				if l == "--json" {
					o.headers = append([]string{"Content-Type: application/json", "Accept: application/json"}, o.headers...)
				}
				o.data = append(o.data, v)
				o.hasData = true
			case "-F", "--form":
				v, err = need(&i, l)
				o.forms = append(o.forms, v)
			case "-u", "--user":
				o.user, err = need(&i, l)
			case "-A", "--user-agent":
				o.agent, err = need(&i, l)
			case "-e", "--referer":
				o.referer, err = need(&i, l)
			case "-w", "--write-out":
				o.writeOut, err = need(&i, l)
			case "--url":
				v, err = need(&i, l)
				o.urls = append(o.urls, v)
			case "-m", "--max-time":
				v, err = need(&i, l)
				if err == nil {
					f, perr := strconv.ParseFloat(v, 64)
					if perr != nil || f < 0 {
						return o, cerr(2, "option %s: expected a proper numerical parameter", l)
					}
					o.maxTime = time.Duration(f * float64(time.Second))
				}
			case "--connect-timeout":
				_, err = need(&i, l)
			case "--retry", "--max-redirs":
				v, err = need(&i, l)
				if err == nil {
					n, perr := strconv.Atoi(v)
					if perr != nil {
						return o, cerr(2, "option %s: expected a proper numerical parameter", l)
					}
					if l == "--retry" {
						o.retry = n
					} else {
						o.maxRedirs = n
					}
				}
			case "--retry-delay":
				v, err = need(&i, l)
				if err == nil {
					n, perr := strconv.Atoi(v)
					if perr != nil || n < 0 {
						return o, cerr(2, "option %s: expected a proper numerical parameter", l)
					}
					o.retryDelay = time.Duration(n) * time.Second
				}
			case "-x", "--proxy", "--socks5", "--unix-socket":
				return o, cerr(2, "option %s: is not supported in wasmbox: the host is the only way out", l)
			default:
				return o, cerr(2, "option %s: is unknown", l)
			}
			if err != nil {
				return o, err
			}
		}
	}
	return o, nil
}

func urlencodeData(v string) string {
	name, val, ok := strings.Cut(v, "=")
	if !ok {
		return url.QueryEscape(v)
	}
	return name + "=" + url.QueryEscape(val)
}

// transport is the HTTP client's way out: every connection is asked of
// the host.
func transport() *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (netConn, error) {
			return dialHost(addr, false)
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (netConn, error) {
			return dialHost(addr, true)
		},
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		ResponseHeaderTimeout: 0,
	}
}

func curlOne(e *cmd.Env, o *curlOpts, raw string) error {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return cerr(3, "URL using bad/illegal format or missing URL")
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return cerr(1, "Protocol \"%s\" not supported or disabled in libcurl", u.Scheme)
	}
	ctx := context.Background()
	if o.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.maxTime)
		defer cancel()
	}
	start := time.Now()
	var lastErr error
	for attempt := 0; ; attempt++ {
		res, err := curlAttempt(ctx, e, o, u, start)
		if err == nil {
			return nil
		}
		lastErr = err
		if attempt >= o.retry || !res.transient || ctx.Err() != nil {
			break
		}
		delay := o.retryDelay << min(attempt, 10)
		if o.retryDelay != time.Second {
			delay = o.retryDelay
		}
		if !o.silent {
			fmt.Fprintf(e.Stderr, "Warning: Problem : %s. Will retry in %d seconds. %d retries left.\n", res.why, int(delay/time.Second), o.retry-attempt)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
	}
	return lastErr
}

type attemptResult struct {
	transient bool
	why       string
}

func curlAttempt(ctx context.Context, e *cmd.Env, o *curlOpts, u *url.URL, start time.Time) (attemptResult, error) {
	var res attemptResult
	method := "GET"
	var body io.Reader
	var ctype string
	switch {
	case len(o.forms) > 0:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range o.forms {
			if err := addForm(mw, f); err != nil {
				return res, err
			}
		}
		mw.Close()
		body, ctype, method = &buf, mw.FormDataContentType(), "POST"
	case o.hasData && o.get:
		q := strings.Join(o.data, "&")
		if u.RawQuery != "" {
			u.RawQuery += "&" + q
		} else {
			u.RawQuery = q
		}
	case o.hasData:
		body, ctype, method = strings.NewReader(strings.Join(o.data, "&")), "application/x-www-form-urlencoded", "POST"
	}
	if o.head {
		method = "HEAD"
	}
	if o.method != "" {
		method = o.method
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return res, cerr(3, "URL using bad/illegal format or missing URL")
	}
	req.Header.Set("User-Agent", "curl/7.88.1")
	req.Header.Set("Accept", "*/*")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if o.compressed {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	if o.agent != "" {
		req.Header.Set("User-Agent", o.agent)
	}
	if o.referer != "" {
		req.Header.Set("Referer", o.referer)
	}
	if o.user != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(o.user)))
	} else if u.User != nil {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.String())))
	}
	for _, h := range o.headers {
		if strings.ContainsAny(h, "\r\n") {
			// curl cuts a header at a line end; sending the rest as
			// another header is the injection it stops.
			h = h[:strings.IndexAny(h, "\r\n")]
		}
		name, val, ok := strings.Cut(h, ":")
		if !ok {
			if n, semi := strings.CutSuffix(h, ";"); semi {
				req.Header[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n))] = []string{""}
			}
			continue
		}
		name = strings.TrimSpace(name)
		val = strings.TrimSpace(val)
		if strings.EqualFold(name, "Host") {
			req.Host = val
			continue
		}
		if val == "" {
			req.Header.Del(name)
			continue
		}
		req.Header.Set(name, val)
	}
	redirects := 0
	client := &http.Client{
		Transport: transport(),
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if !o.location {
				return http.ErrUseLastResponse
			}
			if redirects >= o.maxRedirs {
				return cerr(47, "Maximum (%d) redirects followed", o.maxRedirs)
			}
			redirects++
			return nil
		},
	}
	defer client.CloseIdleConnections()
	if o.verbose {
		fmt.Fprintf(e.Stderr, "> %s %s HTTP/1.1\n> Host: %s\n", method, u.RequestURI(), u.Host)
		for k, vs := range req.Header {
			for _, v := range vs {
				fmt.Fprintf(e.Stderr, "> %s: %s\n", k, v)
			}
		}
		fmt.Fprintln(e.Stderr, ">")
	}
	resp, err := client.Do(req)
	if err != nil {
		ce := classify(ctx, o, req.URL, err, 0, start)
		var c *curlErr
		if errors.As(ce, &c) && c.code == 28 {
			res.transient, res.why = true, "Timeout"
		}
		return res, ce
	}
	defer resp.Body.Close()
	if resp.StatusCode == 408 || resp.StatusCode == 429 || resp.StatusCode >= 500 && resp.StatusCode <= 504 {
		res.transient, res.why = true, "HTTP error"
	}
	if o.verbose {
		fmt.Fprintf(e.Stderr, "< %s %s\n", resp.Proto, resp.Status)
		for k, vs := range resp.Header {
			for _, v := range vs {
				fmt.Fprintf(e.Stderr, "< %s: %s\n", k, v)
			}
		}
		fmt.Fprintln(e.Stderr, "<")
	}
	if o.fail && resp.StatusCode >= 400 && !o.failBody {
		return res, cerr(22, "The requested URL returned error: %d", resp.StatusCode)
	}
	var out io.Writer = e.Stdout
	outName := o.output
	if o.remoteName && outName == "" {
		outName = path.Base(u.Path) // the URL's name, not a redirect's (as curl)
		if outName == "/" || outName == "." || outName == "" {
			return res, cerr(23, "Remote file name has no length!")
		}
	}
	if outName != "" && outName != "-" {
		if o.createDirs {
			os.MkdirAll(filepath.Dir(outName), 0o755)
		}
		f, err := os.Create(outName)
		if err != nil {
			return res, cerr(23, "Failure writing output to destination")
		}
		defer f.Close()
		out = f
	}
	if o.include || o.head {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		resp.Header.Write(out)
		io.WriteString(out, "\r\n")
	}
	var n int64
	if !o.head {
		var src io.Reader = resp.Body
		if o.compressed && resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				return res, cerr(61, "Unrecognized content encoding type. libcurl understands deflate, gzip content encodings.")
			}
			src = zr
		}
		n, err = io.Copy(out, src)
		if err != nil {
			if werr := (*os.PathError)(nil); errors.As(err, &werr) {
				return res, cerr(23, "Failure writing output to destination")
			}
			ce := classify(ctx, o, resp.Request.URL, err, n, start)
			var c *curlErr
			if errors.As(ce, &c) && c.code == 56 && resp.ContentLength > 0 {
				c.code, c.msg = 18, fmt.Sprintf("transfer closed with %d bytes remaining to read", resp.ContentLength-n)
			}
			return res, ce
		}
	}
	if o.writeOut != "" {
		writeOut(e.Stdout, o.writeOut, resp, n, time.Since(start))
	}
	if o.fail && resp.StatusCode >= 400 {
		return res, cerr(22, "The requested URL returned error: %d", resp.StatusCode)
	}
	return res, nil
}

func addForm(mw *multipart.Writer, f string) error {
	name, val, ok := strings.Cut(f, "=")
	if !ok {
		return cerr(26, "Failed to open/read local data from file/application")
	}
	switch {
	case strings.HasPrefix(val, "@"):
		file := val[1:]
		if i := strings.Index(file, ";"); i >= 0 {
			file = file[:i]
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return cerr(26, "Failed to open/read local data from file/application")
		}
		w, err := mw.CreateFormFile(name, filepath.Base(file))
		if err != nil {
			return err
		}
		w.Write(b)
	case strings.HasPrefix(val, "<"):
		b, err := os.ReadFile(val[1:])
		if err != nil {
			return cerr(26, "Failed to open/read local data from file/application")
		}
		mw.WriteField(name, string(b))
	default:
		mw.WriteField(name, val)
	}
	return nil
}

// classify turns a client error into curl's.
func classify(ctx context.Context, o *curlOpts, u *url.URL, err error, got int64, start time.Time) error {
	var ce *curlErr
	if errors.As(err, &ce) {
		return ce
	}
	if ctx.Err() != nil {
		return cerr(28, "Operation timed out after %d milliseconds with %d bytes received", time.Since(start).Milliseconds(), got)
	}
	var ne *netError
	if asNetError(err, &ne) {
		return netErrToCurl(ne, u, start)
	}
	return cerr(56, "Failure when receiving data from the peer")
}
