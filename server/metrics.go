package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of their own;
// every name starts with "wasmbox_".
type metrics struct {
	reg      *prometheus.Registry
	runs     *prometheus.CounterVec
	duration prometheus.Histogram
	rejected prometheus.Counter
	requests *prometheus.CounterVec

	// With a Cluster.
	leasesHeld       prometheus.Gauge
	commits          prometheus.Histogram
	resumes          prometheus.Histogram
	clusterConflicts prometheus.Counter

	commitMu                         sync.Mutex
	commitN, conflictN               uint64
	commitLast, commitSum, commitMax time.Duration
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmbox_runs_total",
			Help: "Runs finished, by error class (OK when the script ran to its own exit).",
		}, []string{"class"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wasmbox_run_duration_seconds",
			Help:    "Duration of runs.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1ms .. ~4.4min
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmbox_http_run_rejections_total",
			Help: "Run requests answered 503 worker_unavailable.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmbox_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		leasesHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wasmbox_cluster_leases_held",
			Help: "Session leases this node holds now.",
		}),
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wasmbox_cluster_commit_seconds",
			Help:    "Time to commit a changed session (snapshot stored, record advanced).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
		}),
		resumes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wasmbox_cluster_resume_seconds",
			Help:    "Time to resume a session from its committed snapshot on this node.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		clusterConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmbox_cluster_conflicts_total",
			Help: "Requests answered 409 conflict: their commit lost the race for the session's revision.",
		}),
	}
	m.reg.MustRegister(m.runs, m.duration, m.rejected, m.requests, poolCollector{s})
	if s.cfg.Cluster != nil {
		m.reg.MustRegister(m.leasesHeld, m.commits, m.resumes, m.clusterConflicts, clusterCollector{s})
	}
	for _, c := range []string{"OK", ClassTimeout, ClassCancelled, ClassLimitExceeded, ClassDenied, ClassNotFound} {
		m.runs.WithLabelValues(c)
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) observeRun(res RunResult) {
	class := res.ErrorClass
	if class == "" {
		class = "OK"
	}
	m.runs.WithLabelValues(class).Inc()
	m.duration.Observe(res.Duration.Seconds())
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (m *metrics) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h(rec, r)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	})
}

// poolCollector reports the pool's lanes and counters at scrape time.
type poolCollector struct{ s *Server }

var (
	descActive    = prometheus.NewDesc("wasmbox_pool_active", "Jobs running, by lane.", []string{"lane"}, nil)
	descIdle      = prometheus.NewDesc("wasmbox_pool_idle", "Idle slots, by lane.", []string{"lane"}, nil)
	descQueued    = prometheus.NewDesc("wasmbox_pool_queued", "Jobs waiting, by lane.", []string{"lane"}, nil)
	descWorkers   = prometheus.NewDesc("wasmbox_pool_workers", "Slots, by lane.", []string{"lane"}, nil)
	descRejected  = prometheus.NewDesc("wasmbox_pool_queue_rejections_total", "Submissions rejected because a queue was full.", nil, nil)
	descJobs      = prometheus.NewDesc("wasmbox_pool_jobs_total", "Jobs finished, by outcome.", []string{"outcome"}, nil)
	descAvgExec   = prometheus.NewDesc("wasmbox_pool_avg_exec_seconds", "Mean running time of finished jobs.", nil, nil)
	descSessions  = prometheus.NewDesc("wasmbox_sessions_active", "Open sessions.", nil, nil)
	descPoolState = prometheus.NewDesc("wasmbox_pool_disabled", "1 when the pool is in disabled mode.", nil, nil)
)

func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descActive, descIdle, descQueued, descWorkers, descRejected, descJobs, descAvgExec, descSessions, descPoolState} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.pool.Stats()
	for lane, ls := range map[string]struct{ a, i, q, w int }{
		"interactive": {st.Interactive.Active, st.Interactive.Idle, st.Interactive.Queued, st.Interactive.Workers},
		"system":      {st.System.Active, st.System.Idle, st.System.Queued, st.System.Workers},
	} {
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, float64(ls.a), lane)
		ch <- prometheus.MustNewConstMetric(descIdle, prometheus.GaugeValue, float64(ls.i), lane)
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(ls.q), lane)
		ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(ls.w), lane)
	}
	ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(st.Totals.Rejected))
	for outcome, n := range map[string]uint64{
		"completed": st.Totals.Completed, "failed": st.Totals.Failed, "timed_out": st.Totals.TimedOut, "cancelled": st.Totals.Cancelled,
	} {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.CounterValue, float64(n), outcome)
	}
	ch <- prometheus.MustNewConstMetric(descAvgExec, prometheus.GaugeValue, st.Totals.AvgExecMs/1000)
	c.s.mu.Lock()
	n := len(c.s.sessions)
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n))
	disabled := 0.0
	if st.Mode == "disabled" {
		disabled = 1
	}
	ch <- prometheus.MustNewConstMetric(descPoolState, prometheus.GaugeValue, disabled)
}

func (m *metrics) observeCommit(d time.Duration) {
	m.commits.Observe(d.Seconds())
	m.commitMu.Lock()
	m.commitN++
	m.commitLast, m.commitSum, m.commitMax = d, m.commitSum+d, max(m.commitMax, d)
	m.commitMu.Unlock()
}

// commitStats fills the commit fields of a ClusterStatus.
func (m *metrics) commitStats(cs *ClusterStatus) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	cs.Commits, cs.Conflicts = m.commitN, m.conflictN
	cs.CommitMS.Last, cs.CommitMS.Max = ms(m.commitLast), ms(m.commitMax)
	if m.commitN > 0 {
		cs.CommitMS.Mean = ms(m.commitSum / time.Duration(m.commitN))
	}
}

// clusterCollector exports the NATS connection state as
// wasmbox_cluster_connected (1 when connected).
type clusterCollector struct{ s *Server }

var clusterConnectedDesc = prometheus.NewDesc("wasmbox_cluster_connected", "1 when this node is connected to the NATS cluster.", []string{"node"}, nil)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- clusterConnectedDesc }

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.cfg.Cluster.Status()
	v := 0.0
	if st.NATS == "CONNECTED" {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(clusterConnectedDesc, prometheus.GaugeValue, v, st.Node)
}
