package netcmd

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// writeOut prints curl's -w format: %{variable}s and \n, \r, \t.
func writeOut(w io.Writer, f string, resp *http.Response, n int64, total time.Duration) {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '\\' && i+1 < len(f):
			i++
			switch f[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte('\\')
				b.WriteByte(f[i])
			}
		case c == '%' && strings.HasPrefix(f[i:], "%{"):
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				b.WriteString(f[i:])
				i = len(f)
				continue
			}
			name := f[i+2 : i+end]
			i += end
			switch name {
			case "http_code", "response_code":
				fmt.Fprintf(&b, "%03d", resp.StatusCode)
			case "size_download":
				fmt.Fprintf(&b, "%d", n)
			case "url_effective":
				b.WriteString(resp.Request.URL.String())
			case "content_type":
				b.WriteString(resp.Header.Get("Content-Type"))
			case "time_total":
				fmt.Fprintf(&b, "%.6f", total.Seconds())
			case "redirect_url":
				if loc, err := resp.Location(); err == nil {
					b.WriteString(loc.String())
				}
			case "http_version":
				fmt.Fprintf(&b, "%d.%d", resp.ProtoMajor, resp.ProtoMinor)
			case "num_redirects":
				r, k := resp.Request, 0
				for r != nil && r.Response != nil {
					k++
					r = r.Response.Request
				}
				fmt.Fprintf(&b, "%d", k)
			default:
				fmt.Fprintf(&b, "%%{%s}", name)
			}
		default:
			b.WriteByte(c)
		}
	}
	io.WriteString(w, b.String())
}
