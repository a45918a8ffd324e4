package opensandbox

import (
	"net"
	"strings"
	"sync"
)

// clientIPHeader tells the server the SDK host's own address (as the official Go
// SDK does). A dedicated name, because proxies rewrite X-Forwarded-For.
const clientIPHeader = "OPEN-SANDBOX-CLIENT-IP"

var clientIP struct {
	once  sync.Once
	value string
}

// detectedClientIP is the host's LAN IPv4 address, read once from its interfaces
// ("" when none is found: the header is then not sent).
func detectedClientIP() string {
	clientIP.once.Do(func() { clientIP.value = hostIPv4() })
	return clientIP.value
}

// hostIPv4 reads the address of a real interface (not by dialling out: an egress
// gateway's address would not identify the host). Physical-looking names (eth*,
// en*, bond*) win over others; container, bridge and VPN interfaces are skipped;
// between equals, a private address wins.
func hostIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	best, bestRank, bestPrivate := "", 1<<30, false
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || virtualInterface(iface.Name) {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		rank := interfaceRank(iface.Name)
		for _, a := range addrs {
			ipNet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			v4 := ipNet.IP.To4()
			if v4 == nil || v4.IsLoopback() || v4.IsLinkLocalUnicast() || v4.IsUnspecified() {
				continue
			}
			private := v4.IsPrivate()
			if rank < bestRank || (rank == bestRank && private && !bestPrivate) {
				best, bestRank, bestPrivate = v4.String(), rank, private
			}
		}
	}
	return best
}

func virtualInterface(name string) bool {
	n := strings.ToLower(name)
	for _, p := range []string{"docker", "veth", "br-", "virbr", "vmnet", "vbox", "utun", "tun", "tap", "zt", "cni", "flannel", "cali"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func interfaceRank(name string) int {
	n := strings.ToLower(name)
	switch {
	case n == "en0":
		return 0
	case n == "eth0":
		return 1
	case strings.HasPrefix(n, "eth"):
		return 2
	case strings.HasPrefix(n, "en"):
		return 3
	case strings.HasPrefix(n, "bond"):
		return 4
	}
	return 100
}

// applyClientIP adds the client IP header unless the caller set one (any case).
func applyClientIP(headers map[string]string, ip string) map[string]string {
	if ip == "" {
		return headers
	}
	for k := range headers {
		if strings.EqualFold(k, clientIPHeader) {
			return headers
		}
	}
	if headers == nil {
		headers = map[string]string{}
	}
	headers[clientIPHeader] = ip
	return headers
}
