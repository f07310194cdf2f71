package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// Proxies says which hop of X-Forwarded-For is the client: the proxies
// that sit in front of the platform's own front end (a load balancer, a
// Firebase Hosting rewrite) and append to the header. Without any, the
// client is the last hop, the one the platform wrote.
//
// Hops trusts the last Hops hops before the platform's; CIDRs trusts the
// hops, from the right, whose address is in one of them (the safer form:
// a request that bypasses the proxies cannot pick its own address).
type Proxies struct {
	Hops  int
	CIDRs []netip.Prefix
}

// ParseProxies reads TRUSTED_PROXIES: empty, a hop count, or
// comma-separated CIDRs.
func ParseProxies(v string) (Proxies, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Proxies{}, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > 10 {
			return Proxies{}, fmt.Errorf("a hop count must be between 0 and 10, got %d", n)
		}
		return Proxies{Hops: n}, nil
	}
	var p Proxies
	for item := range strings.SplitSeq(v, ",") {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(item))
		if err != nil {
			return Proxies{}, fmt.Errorf("%q is neither a hop count nor a CIDR such as 10.0.0.0/8", item)
		}
		p.CIDRs = append(p.CIDRs, prefix.Masked())
	}
	return p, nil
}

// ClientAddr is the address a request's budgets count it under. Deployed,
// the platform's front end appended the connecting address to
// X-Forwarded-For; locally the peer is that address, appended here.
// Walking from the right, trusted proxies are skipped; the first other hop
// is the client. A hop that is not an address, or a request with fewer hops
// than trusted proxies, counts under the last hop the platform saw.
func (p Proxies) ClientAddr(r *http.Request, deployed bool) string {
	peer := peerAddr(r)
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for h := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	switch {
	case !deployed && p.Hops == 0 && len(p.CIDRs) == 0:
		return peer // locally, with no proxy: the peer
	case !deployed || len(hops) == 0:
		hops = append(hops, peer)
	}
	last := hops[len(hops)-1]
	i := len(hops) - 1
	if len(p.CIDRs) > 0 {
		for i > 0 && p.trusted(hops[i]) {
			i--
		}
	} else {
		i -= p.Hops
	}
	if i < 0 {
		return last
	}
	if a, err := netip.ParseAddr(strings.Trim(hops[i], "[]")); err == nil {
		return a.Unmap().String()
	}
	return last
}

func (p Proxies) trusted(hop string) bool {
	a, err := netip.ParseAddr(strings.Trim(hop, "[]"))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, c := range p.CIDRs {
		if c.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
