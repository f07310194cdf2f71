package clientaddr

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestClientAddr(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.0.0.7:5555"
	req.Header.Add("X-Forwarded-For", "6.6.6.6, 1.2.3.4")
	if got := (Proxies{}).ClientAddr(req, false); got != "10.0.0.7" {
		t.Errorf("locally: %q, want the peer", got)
	}
	if got := (Proxies{}).ClientAddr(req, true); got != "1.2.3.4" {
		t.Errorf("deployed: %q, want the last hop (the first one is the client's to write)", got)
	}
	// A header of 100,000 hops costs what its last few do: the hops were
	// all split into a slice first.
	long := httptest.NewRequest("GET", "/", nil)
	long.Header.Add("X-Forwarded-For", strings.Repeat("9.9.9.9, ", 100_000)+"1.2.3.4, 10.0.0.1")
	p := Proxies{Hops: 1}
	if got := p.ClientAddr(long, true); got != "1.2.3.4" {
		t.Errorf("behind one proxy: %q", got)
	}
	if allocs := testing.AllocsPerRun(10, func() { p.ClientAddr(long, true) }); allocs > 10 {
		t.Errorf("%v allocations for a long X-Forwarded-For", allocs)
	}
}

func TestTrustedProxies(t *testing.T) {
	cidrs, err := Parse("35.191.0.0/16, 130.211.0.0/22")
	if err != nil {
		t.Fatal(err)
	}
	two, _ := Parse("2")
	for _, tc := range []struct {
		name     string
		proxies  Proxies
		deployed bool
		xff      string
		want     string
	}{
		{"locally, the peer", Proxies{}, false, "6.6.6.6", "10.0.0.7"},
		{"deployed, the hop the platform wrote", Proxies{}, true, "6.6.6.6, 1.2.3.4", "1.2.3.4"},
		{"deployed without the header, the peer", Proxies{}, true, "", "10.0.0.7"},
		{"a load balancer in front: one hop more", Proxies{Hops: 1}, true, "6.6.6.6, 1.2.3.4, 35.191.3.4", "1.2.3.4"},
		{"two hops", two, true, "6.6.6.6, 1.2.3.4, 35.191.3.4, 35.191.9.9", "1.2.3.4"},
		{"fewer hops than proxies: the platform's", two, true, "1.2.3.4", "1.2.3.4"},
		{"by address: proxies skipped", cidrs, true, "6.6.6.6, 1.2.3.4, 130.211.1.1, 35.191.3.4", "1.2.3.4"},
		{"by address: a bypass cannot pick its address", cidrs, true, "6.6.6.6, 1.2.3.4", "1.2.3.4"},
		{"locally with a proxy: the peer appended", Proxies{Hops: 1}, false, "1.2.3.4", "1.2.3.4"},
		{"IPv6 and IPv4-mapped", Proxies{}, true, "::ffff:1.2.3.4", "1.2.3.4"},
		{"a hop that is no address: the platform's", Proxies{Hops: 1}, true, "junk, 1.2.3.4", "1.2.3.4"},
	} {
		req, _ := http.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.0.0.7:5555"
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := tc.proxies.ClientAddr(req, tc.deployed); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"-1", "11", "10.0.0.0/33", "proxy"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
