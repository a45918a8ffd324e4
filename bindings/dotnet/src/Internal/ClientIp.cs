// (1.1) The SDK host's own intranet IPv4, sent as OPEN-SANDBOX-CLIENT-IP with every request
// (as the newest official SDKs do). Read from a real interface's address, never by dialling
// out: an egress gateway's address would not identify the host. A dedicated header name,
// because proxies rewrite X-Forwarded-For.

using System;
using System.Collections.Generic;
using System.Net.NetworkInformation;
using System.Net.Sockets;

namespace OpenSandbox.Internal
{
    internal static class ClientIp
    {
        public const string Header = "OPEN-SANDBOX-CLIENT-IP";

        private static readonly string[] VirtualPrefixes = { "docker", "veth", "br-", "virbr", "vmnet", "vbox", "utun", "tun", "tap", "zt", "cni", "flannel", "cali" };
        private static readonly Lazy<string> Detected = new Lazy<string>(Detect);

        /// <summary>The host's address ("" when none was found: the header is then not sent), read once.</summary>
        public static string Value { get { return Detected.Value; } }

        private static string Detect()
        {
            try
            {
                var nics = new List<KeyValuePair<string, List<string>>>();
                foreach (var nic in NetworkInterface.GetAllNetworkInterfaces())
                {
                    try
                    {
                        if (nic.OperationalStatus != OperationalStatus.Up || nic.NetworkInterfaceType == NetworkInterfaceType.Loopback) continue;
                        var ips = new List<string>();
                        foreach (var ua in nic.GetIPProperties().UnicastAddresses)
                            if (ua.Address.AddressFamily == AddressFamily.InterNetwork) ips.Add(ua.Address.ToString());
                        nics.Add(new KeyValuePair<string, List<string>>(nic.Name, ips));
                    }
                    catch (Exception)
                    {
                        // an interface that cannot be read is skipped
                    }
                }
                return Select(nics);
            }
            catch (Exception)
            {
                return "";
            }
        }

        /// <summary>
        /// Picks an address: known NIC names first (en0, eth0, eth*, en*, bond*), then a private
        /// (RFC 1918) address among equals; container, bridge and VPN interfaces, loopback,
        /// link-local and unspecified addresses are skipped.
        /// </summary>
        internal static string Select(IEnumerable<KeyValuePair<string, List<string>>> nics)
        {
            var best = "";
            var bestRank = int.MaxValue;
            var bestPrivate = false;
            foreach (var nic in nics)
            {
                var name = (nic.Key ?? "").ToLowerInvariant();
                if (IsVirtual(name)) continue;
                var rank = Rank(name);
                foreach (var ip in nic.Value)
                {
                    var o = Parse(ip);
                    if (o == null || o[0] == 127 || (o[0] == 169 && o[1] == 254) || (o[0] == 0 && o[1] == 0 && o[2] == 0 && o[3] == 0)) continue;
                    var priv = o[0] == 10 || (o[0] == 172 && o[1] >= 16 && o[1] <= 31) || (o[0] == 192 && o[1] == 168);
                    if (rank < bestRank || (rank == bestRank && priv && !bestPrivate))
                    {
                        best = ip;
                        bestRank = rank;
                        bestPrivate = priv;
                    }
                }
            }
            return best;
        }

        /// <summary>Adds the header to <paramref name="headers"/> unless the caller set one (any case) or no address is known.</summary>
        internal static void Apply(Dictionary<string, object> headers, string ip)
        {
            if (string.IsNullOrEmpty(ip)) return;
            foreach (var k in headers.Keys)
                if (string.Equals(k, Header, StringComparison.OrdinalIgnoreCase)) return;
            headers[Header] = ip;
        }

        private static bool IsVirtual(string name)
        {
            foreach (var p in VirtualPrefixes)
                if (name.StartsWith(p, StringComparison.Ordinal)) return true;
            return false;
        }

        private static int Rank(string name)
        {
            if (name == "en0") return 0;
            if (name == "eth0") return 1;
            if (name.StartsWith("eth", StringComparison.Ordinal)) return 2;
            if (name.StartsWith("en", StringComparison.Ordinal)) return 3;
            if (name.StartsWith("bond", StringComparison.Ordinal)) return 4;
            return 100;
        }

        private static int[] Parse(string ip)
        {
            var parts = (ip ?? "").Split('.');
            if (parts.Length != 4) return null;
            var r = new int[4];
            for (var i = 0; i < 4; i++)
            {
                int n;
                if (!int.TryParse(parts[i], System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out n) || n > 255) return null;
                r[i] = n;
            }
            return r;
        }
    }
}
