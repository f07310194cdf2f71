// Package clientaddr says which address a request comes from, for
// budgets: the hop of X-Forwarded-For that the platform or a trusted proxy
// wrote (TRUSTED_PROXIES).
package clientaddr

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

// Parse reads TRUSTED_PROXIES: empty, a hop count, or
// comma-separated CIDRs.
func Parse(v string) (Proxies, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Proxies{}, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > maxHops {
			return Proxies{}, fmt.Errorf("a hop count must be between 0 and %d, got %d", maxHops, n)
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

// maxHops bounds the proxies trusted by count (TRUSTED_PROXIES=10).
const maxHops = 10

// ClientAddr is the address a request's budgets count it under. Deployed,
// the platform's front end appended the connecting address to
// X-Forwarded-For; locally the peer is that address, appended here.
// Walking from the right, trusted proxies are skipped; the first other hop
// is the client. A hop that is not an address, or a request with fewer hops
// than trusted proxies, counts under the last hop the platform saw. Only
// the last maxHops+1 hops are read, however long the header.
func (p Proxies) ClientAddr(r *http.Request, deployed bool) string {
	peer := peerAddr(r)
	if !deployed && p.Hops == 0 && len(p.CIDRs) == 0 {
		return peer // locally, with no proxy: the peer
	}
	var hops []string // from the right
	if !deployed {
		hops = append(hops, peer)
	}
	hopsFromRight(r, func(h string) bool {
		hops = append(hops, h)
		return len(hops) <= maxHops
	})
	if len(hops) == 0 {
		hops = append(hops, peer)
	}
	i := p.Hops
	if len(p.CIDRs) > 0 {
		for i = 0; i < len(hops)-1 && p.trusted(hops[i]); i++ {
		}
	}
	if i >= len(hops) {
		return hops[0]
	}
	if a, err := netip.ParseAddr(strings.Trim(hops[i], "[]")); err == nil {
		return a.Unmap().String()
	}
	return hops[0]
}

// hopsFromRight calls f with each hop of X-Forwarded-For, the last one
// first, until f returns false.
func hopsFromRight(r *http.Request, f func(hop string) bool) {
	values := r.Header.Values("X-Forwarded-For")
	for k := len(values) - 1; k >= 0; k-- {
		v := values[k]
		for {
			j := strings.LastIndexByte(v, ',')
			if !f(strings.TrimSpace(v[j+1:])) {
				return
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
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
