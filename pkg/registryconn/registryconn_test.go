package registryconn

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// get sends GET url through c's transport.
func get(c Config, url string) (*http.Response, error) {
	t, err := c.Transport()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.RoundTrip(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestTheTransportTrustsTheCAItIsGivenAndNoOther(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	tests := []struct {
		name    string
		config  Config
		wantErr string
	}{
		{name: "the server's CA is trusted", config: Config{CAData: ca}},
		{name: "without the CA the certificate is refused", config: Config{}, wantErr: "certificate"},
		{name: "skipping verification reaches the server", config: Config{InsecureSkipTLSVerify: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			resp, err := get(tt.config, srv.URL)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		})
	}
}

func TestCADataWithoutACertificateIsRefused(t *testing.T) {
	g := NewWithT(t)
	_, err := Config{CAData: []byte("not a certificate")}.TLSConfig()
	g.Expect(err).To(MatchError(ErrNoCACertificate))
	_, err = Config{CAData: []byte("not a certificate")}.Transport()
	g.Expect(err).To(MatchError(ErrNoCACertificate))
}

func TestPlainHTTPIsSpokenOnlyWhenAskedFor(t *testing.T) {
	g := NewWithT(t)
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	_, err := get(Config{}, "http://"+host+"/strict")
	g.Expect(err).To(MatchError(ContainSubstring("refusing plain HTTP to " + host)))

	resp, err := get(Config{PlainHTTP: true}, "https://"+host+"/plain")
	g.Expect(err).NotTo(HaveOccurred(), "an https:// request goes out as http://")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(paths).To(Equal([]string{"/plain"}), "the refused request never reached the server")
}

// recorder is a RoundTripper that records the hosts it is asked to reach and answers 200.
type recorder struct{ hosts []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.hosts = append(r.hosts, req.URL.Host)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestCredentialsGoInTheClearOnlyToLoopback(t *testing.T) {
	g := NewWithT(t)
	next := &recorder{}
	rt := plainHTTP{next}
	send := func(host string, withCredentials bool) error {
		req, err := http.NewRequest(http.MethodGet, "https://"+host+"/v2/", nil)
		g.Expect(err).NotTo(HaveOccurred())
		if withCredentials {
			req.SetBasicAuth("alice", "secret")
		}
		_, err = rt.RoundTrip(req)
		return err
	}

	g.Expect(send("127.0.0.1:5001", true)).To(Succeed())
	g.Expect(send("registry.example.com:5000", false)).To(Succeed(), "an anonymous request may go in the clear")
	err := send("registry.example.com:5000", true)
	g.Expect(err).To(MatchError(ContainSubstring("refusing to send credentials to registry.example.com:5000 over plain HTTP")))
	g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
	g.Expect(next.hosts).To(Equal([]string{"127.0.0.1:5001", "registry.example.com:5000"}), "the request with credentials never left")
}
