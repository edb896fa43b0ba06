package devicesim

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// jinjaHeader is the first line of userdata that cloud-init renders as a Jinja template.
const jinjaHeader = "## template: jinja"

// userData is what a device takes from its cloud-init: the files it writes and the kubeadm
// command it runs.
type userData struct {
	// files are write_files' contents by path.
	files map[string][]byte
	// kubeadm is "init" or "join"; configPath the file of its --config flag.
	kubeadm, configPath string
}

// instanceData is what cloud-init's Jinja templates may refer to as v1.<key>.
type instanceData map[string]string

var jinjaVariable = regexp.MustCompile(`\{\{\s*v1\.([a-z_]+)\s*\}\}`)

// render resolves the {{ v1.<key> }} variables of a Jinja userdata; other userdata is returned
// as is. A variable instance data does not hold is an error, as it is for cloud-init.
func render(raw string, data instanceData) (string, error) {
	if !strings.HasPrefix(raw, jinjaHeader) {
		return raw, nil
	}
	var missing []string
	out := jinjaVariable.ReplaceAllStringFunc(raw, func(m string) string {
		key := jinjaVariable.FindStringSubmatch(m)[1]
		v, ok := data[key]
		if !ok {
			missing = append(missing, key)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("userdata refers to unknown instance data v1.%s", strings.Join(missing, ", v1."))
	}
	return out, nil
}

// cloudConfig is the part of a #cloud-config document a simulated device reads.
type cloudConfig struct {
	WriteFiles []struct {
		Path     string `json:"path"`
		Encoding string `json:"encoding"`
		Content  string `json:"content"`
	} `json:"write_files"`
	// RunCmd entries are shell lines or argument lists.
	RunCmd []any `json:"runcmd"`
}

var kubeadmCommand = regexp.MustCompile(`(?:^|[\s;&|])kubeadm\s+(init|join)\b(.*)`)

// parseUserData reads the rendered userdata of a device: a #cloud-config document whose runcmd
// runs kubeadm init or join with --config.
func parseUserData(rendered string) (*userData, error) {
	body := strings.TrimPrefix(rendered, jinjaHeader+"\n")
	if !strings.HasPrefix(body, "#cloud-config") {
		return nil, errors.New("userdata is not a #cloud-config document")
	}
	var cc cloudConfig
	if err := yaml.Unmarshal([]byte(body), &cc); err != nil {
		return nil, fmt.Errorf("parsing the cloud-config: %w", err)
	}
	ud := &userData{files: map[string][]byte{}}
	for _, f := range cc.WriteFiles {
		content, err := decode(f.Content, f.Encoding)
		if err != nil {
			return nil, fmt.Errorf("write_files %s: %w", f.Path, err)
		}
		ud.files[f.Path] = content
	}
	for _, entry := range cc.RunCmd {
		line := commandLine(entry)
		m := kubeadmCommand.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if ud.kubeadm != "" {
			return nil, fmt.Errorf("runcmd runs kubeadm twice (%s and %s)", ud.kubeadm, m[1])
		}
		ud.kubeadm = m[1]
		ud.configPath = configFlag(m[2])
		if ud.configPath == "" {
			return nil, fmt.Errorf("runcmd %q: kubeadm %s without --config", line, m[1])
		}
		if _, ok := ud.files[ud.configPath]; !ok {
			return nil, fmt.Errorf("runcmd %q: kubeadm's --config %s is not among write_files", line, ud.configPath)
		}
	}
	if ud.kubeadm == "" {
		return nil, errors.New("runcmd runs neither kubeadm init nor kubeadm join")
	}
	return ud, nil
}

// commandLine is a runcmd entry as the shell line it runs.
func commandLine(entry any) string {
	switch e := entry.(type) {
	case string:
		return e
	case []any:
		parts := make([]string, 0, len(e))
		for _, p := range e {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, " ")
	default:
		return ""
	}
}

// configFlag returns the value of --config in the arguments of a command line, up to the end of
// the command (&&, ;, |).
func configFlag(args string) string {
	fields := strings.Fields(args)
	for i, f := range fields {
		switch {
		case f == "&&" || f == ";" || f == "|" || f == "||":
			return ""
		case f == "--config" && i+1 < len(fields):
			return fields[i+1]
		case strings.HasPrefix(f, "--config="):
			return strings.TrimPrefix(f, "--config=")
		}
	}
	return ""
}

// decode undoes a write_files encoding.
func decode(content, encoding string) ([]byte, error) {
	switch strings.ToLower(encoding) {
	case "", "text/plain":
		return []byte(content), nil
	case "b64", "base64":
		return base64.StdEncoding.DecodeString(content)
	case "gz", "gzip":
		return gunzip([]byte(content))
	case "gz+b64", "gzip+base64", "gz+base64", "gzip+b64":
		raw, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, err
		}
		return gunzip(raw)
	default:
		return nil, fmt.Errorf("unknown encoding %q", encoding)
	}
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}
