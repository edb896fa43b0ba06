package charttest

// HelloOption varies the hello chart.
type HelloOption func(*hello)

type hello struct {
	name                string
	nonNegativeReplicas bool
}

// Named names the hello chart name instead of hello.
func Named(name string) HelloOption {
	return func(h *hello) { h.name = name }
}

// NonNegativeReplicas makes the schema reject a negative replicas value (minimum 0).
func NonNegativeReplicas() HelloOption {
	return func(h *hello) { h.nonNegativeReplicas = true }
}

// Hello is a web app: a ConfigMap <release>-config holding the greeting value and the chart
// version, and a Deployment <release> of replicas pods. Its values are greeting (a string, default
// hello) and replicas (an integer, default 1), described by values.schema.json. Each call returns
// new Files, which a test may change.
func Hello(version string, opts ...HelloOption) Chart {
	h := hello{name: "hello"}
	for _, opt := range opts {
		opt(&h)
	}
	replicas := `{"type": "integer"}`
	if h.nonNegativeReplicas {
		replicas = `{"type": "integer", "minimum": 0}`
	}
	return Chart{Name: h.name, Version: version, Files: map[string]string{
		"values.yaml": "greeting: hello\nreplicas: 1\n",
		"values.schema.json": `{"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
  "properties": {"greeting": {"type": "string"}, "replicas": ` + replicas + `}}`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  version: {{ .Chart.Version | quote }}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: registry.example/hello:1
`,
	}}
}

// HookJob is the template of a hook Job <release>-<job> that Helm runs at hooks (the value of
// its helm.sh/hook annotation, e.g. "post-install,post-upgrade"). An API server without a Job
// controller never completes it: Helm waits for it until its timeout, unless a test completes it.
func HookJob(job, hooks string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-` + job + `
  annotations:
    "helm.sh/hook": ` + hooks + `
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: ` + job + `
        image: registry.example/` + job + `:1
`
}
