package main

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// k8sObject is what TestDeploymentSketch reads of a Kubernetes object.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas    int              `yaml:"replicas"`
		ServiceName string           `yaml:"serviceName"`
		Selector    yaml.Node        `yaml:"selector"`
		ClusterIP   string           `yaml:"clusterIP"`
		Ports       []k8sServicePort `yaml:"ports"`
		Template    k8sPodTemplate   `yaml:"template"`
		Extra       map[string]any   `yaml:",inline"`
	} `yaml:"spec"`
}

type k8sServicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort any    `yaml:"targetPort"`
}

type k8sPodTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Containers []k8sContainer `yaml:"containers"`
		Volumes    []struct {
			Name   string `yaml:"name"`
			Secret *struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"secret"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path        string `yaml:"path"`
		Port        int    `yaml:"port"`
		HTTPHeaders []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"httpHeaders"`
	} `yaml:"httpGet"`
}

// TestDeploymentSketch parses docs/kubernetes.yaml (the fleet's
// deployment sketch) and checks that it holds together: the wasmbox
// container's args are valid `wasmbox serve` flags with --cluster naming
// the NATS pods on their client port, the listen port is the container
// port, the probes hit /health there with a bearer token, the token file
// is in a mounted Secret, NATS runs 3 servers with JetStream and routes to
// each other, and the Services select the pods.
func TestDeploymentSketch(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "kubernetes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("an object without kind or name: %+v", o)
		}
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	get := func(key string) k8sObject {
		o, ok := objs[key]
		if !ok {
			t.Fatalf("no %s in the sketch", key)
		}
		return o
	}

	// NATS: 3 servers, JetStream, routes to each pod of the headless service.
	nats := get("StatefulSet/nats")
	if nats.Spec.Replicas != 3 || nats.Spec.ServiceName != "nats" {
		t.Fatalf("nats StatefulSet: replicas %d, serviceName %q", nats.Spec.Replicas, nats.Spec.ServiceName)
	}
	if svc := get("Service/nats"); svc.Spec.ClusterIP != "None" {
		t.Fatal("the nats Service must be headless (pod DNS names nats-N.nats)")
	}
	conf := get("ConfigMap/nats-config").Data["nats.conf"]
	for _, want := range []string{"jetstream", "port: 4222", "port: 6222", "nats://nats-0.nats:6222", "nats://nats-1.nats:6222", "nats://nats-2.nats:6222"} {
		if !strings.Contains(conf, want) {
			t.Fatalf("nats.conf lacks %q", want)
		}
	}
	checkSelects(t, get("Service/nats"), nats)

	// wasmbox.
	dep := get("Deployment/wasmbox")
	if dep.Spec.Replicas < 2 {
		t.Fatalf("wasmbox Deployment: %d replicas", dep.Spec.Replicas)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("wasmbox pods: want one container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image == "" || !strings.Contains(c.Image, "wasmbox") {
		t.Fatalf("image %q", c.Image)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args %q: want serve first", c.Args)
	}
	// The args parse as the real serve command's flags.
	var stdout, stderr bytes.Buffer
	cmd := newServeCmd(&app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Fatalf("serve %q: %v", c.Args[1:], err)
	}
	if cmd.Flags().NArg() != 0 {
		t.Fatalf("serve takes no arguments, got %q", cmd.Flags().Args())
	}
	flag := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	var clusterHosts []string
	for _, u := range strings.Split(flag("cluster"), ",") {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "nats" || pu.Port() != "4222" {
			t.Fatalf("--cluster %q: %q is not nats://HOST:4222", flag("cluster"), u)
		}
		clusterHosts = append(clusterHosts, pu.Hostname())
	}
	if strings.Join(clusterHosts, " ") != "nats-0.nats nats-1.nats nats-2.nats" {
		t.Fatalf("--cluster names %q, want the 3 NATS pods", clusterHosts)
	}
	if flag("allow-non-loopback") != "true" || flag("token-file") == "" {
		t.Fatal("a fleet listens beyond loopback: it needs --allow-non-loopback and --token-file")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "fieldRef:metadata.name" || env["POD_IP"] != "fieldRef:status.podIP" {
		t.Fatalf("env %v: POD_NAME and POD_IP must come from the pod", env)
	}
	if flag("cluster-node") != "$(POD_NAME)" {
		t.Fatalf("--cluster-node %q: want the pod's name", flag("cluster-node"))
	}
	_, lport, err := splitHostPort(flag("listen"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != lport {
		t.Fatalf("container ports %+v, want the --listen port %d", c.Ports, lport)
	}
	if !strings.HasSuffix(flag("cluster-addr"), ":"+strconv.Itoa(lport)) {
		t.Fatalf("--cluster-addr %q: want the listen port", flag("cluster-addr"))
	}
	for name, p := range map[string]*k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("%s probe: want httpGet", name)
		}
		if !strings.HasPrefix(p.HTTPGet.Path, "/health") || p.HTTPGet.Port != lport {
			t.Fatalf("%s probe: %s on %d, want /health on %d", name, p.HTTPGet.Path, p.HTTPGet.Port, lport)
		}
		auth := false
		for _, h := range p.HTTPGet.HTTPHeaders {
			auth = auth || h.Name == "Authorization" && strings.HasPrefix(h.Value, "Bearer ")
		}
		if !auth {
			t.Fatalf("%s probe: /health needs the bearer token", name)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/health?ready" {
		t.Fatalf("readiness probe %q: want /health?ready (503 while the node cannot serve)", c.ReadinessProbe.HTTPGet.Path)
	}
	// The token file is in a mounted Secret.
	secretVolumes := map[string]bool{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "" {
			secretVolumes[v.Name] = true
		}
	}
	inSecret := false
	for _, m := range c.VolumeMounts {
		if secretVolumes[m.Name] && strings.HasPrefix(flag("token-file"), strings.TrimSuffix(m.MountPath, "/")+"/") {
			inSecret = true
		}
	}
	if !inSecret {
		t.Fatalf("--token-file %s is not in a mounted Secret", flag("token-file"))
	}
	svc := get("Service/wasmbox")
	checkSelects(t, svc, dep)
	if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].TargetPort != lport {
		t.Fatalf("Service/wasmbox ports %+v: want targetPort %d", svc.Spec.Ports, lport)
	}
}

// checkSelects checks that svc's selector matches the labels of w's pods.
func checkSelects(t *testing.T, svc, w k8sObject) {
	t.Helper()
	var sel map[string]string
	if err := svc.Spec.Selector.Decode(&sel); err != nil || len(sel) == 0 {
		t.Fatalf("Service/%s: no selector (%v)", svc.Metadata.Name, err)
	}
	for k, v := range sel {
		if w.Spec.Template.Metadata.Labels[k] != v {
			t.Fatalf("Service/%s selects %s=%s, which %s's pods lack", svc.Metadata.Name, k, v, w.Metadata.Name)
		}
	}
}

func splitHostPort(hp string) (string, int, error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", 0, errors.New("no port in " + hp)
	}
	p, err := strconv.Atoi(hp[i+1:])
	return hp[:i], p, err
}
