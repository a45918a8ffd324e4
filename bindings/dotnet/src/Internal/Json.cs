// A small JSON reader/writer. The C ABI passes option and model structs as UTF-8 JSON;
// netstandard2.0 and Mono have no System.Text.Json, and a dependency for ~300 lines of
// parsing is not worth it. Values are: null, bool, long, double, string,
// List<object> and Dictionary<string, object> (insertion-ordered enough for our use).

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace OpenSandbox.Internal
{
    internal static class Json
    {
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var p = new Parser(text);
            p.SkipWs();
            var v = p.ReadValue();
            p.SkipWs();
            if (p.Pos != text.Length) throw new FormatException("trailing characters in JSON at " + p.Pos);
            return v;
        }

        public static string Write(object value)
        {
            var sb = new StringBuilder();
            WriteValue(sb, value);
            return sb.ToString();
        }

        public static void WriteValue(StringBuilder sb, object value)
        {
            if (value == null) { sb.Append("null"); return; }
            var s = value as string;
            if (s != null) { WriteString(sb, s); return; }
            if (value is bool) { sb.Append((bool)value ? "true" : "false"); return; }
            if (value is int || value is long || value is short || value is byte || value is uint || value is ulong)
            {
                sb.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
                return;
            }
            if (value is double || value is float || value is decimal)
            {
                var d = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) { sb.Append("null"); return; }
                sb.Append(d.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            var dict = value as IDictionary<string, object>;
            if (dict != null)
            {
                sb.Append('{');
                var first = true;
                foreach (var kv in dict)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, kv.Key);
                    sb.Append(':');
                    WriteValue(sb, kv.Value);
                }
                sb.Append('}');
                return;
            }
            var sdict = value as IEnumerable<KeyValuePair<string, string>>;
            if (sdict != null)
            {
                sb.Append('{');
                var first = true;
                foreach (var kv in sdict)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, kv.Key);
                    sb.Append(':');
                    WriteValue(sb, kv.Value);
                }
                sb.Append('}');
                return;
            }
            var list = value as System.Collections.IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                var first = true;
                foreach (var item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteValue(sb, item);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("cannot write a " + value.GetType() + " as JSON");
        }

        public static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (var c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        // ---- typed accessors over parsed values (null-tolerant) ----

        public static Dictionary<string, object> Obj(object v) { return v as Dictionary<string, object>; }
        public static List<object> Arr(object v) { return v as List<object>; }

        /// <summary>
        /// The value of <paramref name="key"/>, else of its snake_case form: the models read
        /// the op layer's results (snake_case, bindings/common/README.md §3) with the
        /// official SDK's camelCase names. Map keys (metadata, headers) are never renamed.
        /// </summary>
        public static object Get(object obj, string key)
        {
            var d = obj as Dictionary<string, object>;
            if (d == null) return null;
            object v;
            if (d.TryGetValue(key, out v)) return v;
            var snake = SnakeCase(key);
            if (!ReferenceEquals(snake, key) && d.TryGetValue(snake, out v)) return v;
            return null;
        }

        /// <summary>"lastTransitionAt" → "last_transition_at" (the same string when nothing changes).</summary>
        internal static string SnakeCase(string key)
        {
            var upper = false;
            foreach (var c in key) if (c >= 'A' && c <= 'Z') { upper = true; break; }
            if (!upper) return key;
            var b = new StringBuilder(key.Length + 4);
            for (var i = 0; i < key.Length; i++)
            {
                var c = key[i];
                if (c >= 'A' && c <= 'Z')
                {
                    if (i > 0) b.Append('_');
                    b.Append((char)(c - 'A' + 'a'));
                }
                else b.Append(c);
            }
            return b.ToString();
        }

        public static string Str(object obj, string key) { return AsString(Get(obj, key)); }

        public static string AsString(object v)
        {
            if (v == null) return null;
            var s = v as string;
            if (s != null) return s;
            if (v is bool) return (bool)v ? "true" : "false";
            if (v is long || v is double) return Convert.ToString(v, CultureInfo.InvariantCulture);
            return Write(v);
        }

        public static long? Long(object obj, string key) { return AsLong(Get(obj, key)); }

        public static long? AsLong(object v)
        {
            if (v is long) return (long)v;
            if (v is double) return (long)(double)v;
            var s = v as string;
            long r;
            if (s != null && long.TryParse(s, NumberStyles.Integer, CultureInfo.InvariantCulture, out r)) return r;
            return null;
        }

        public static double? Double(object obj, string key)
        {
            var v = Get(obj, key);
            if (v is long) return (long)v;
            if (v is double) return (double)v;
            return null;
        }

        public static bool? Bool(object obj, string key)
        {
            var v = Get(obj, key);
            if (v is bool) return (bool)v;
            return null;
        }

        public static DateTime? Time(object obj, string key)
        {
            var s = Get(obj, key) as string;
            if (s == null) return null;
            DateTime t;
            if (DateTime.TryParse(s, CultureInfo.InvariantCulture,
                    DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out t))
                return t;
            return null;
        }

        public static string FormatTime(DateTime t)
        {
            return t.ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture);
        }

        public static List<string> StrList(object obj, string key)
        {
            var a = Get(obj, key) as List<object>;
            if (a == null) return null;
            var r = new List<string>(a.Count);
            foreach (var x in a) r.Add(AsString(x));
            return r;
        }

        public static Dictionary<string, string> StrMap(object obj, string key)
        {
            var d = Get(obj, key) as Dictionary<string, object>;
            if (d == null) return null;
            var r = new Dictionary<string, string>();
            foreach (var kv in d) r[kv.Key] = AsString(kv.Value);
            return r;
        }

        private sealed class Parser
        {
            private readonly string _s;
            public int Pos;

            public Parser(string s) { _s = s; }

            public void SkipWs()
            {
                while (Pos < _s.Length)
                {
                    var c = _s[Pos];
                    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') Pos++;
                    else break;
                }
            }

            private FormatException Err(string what)
            {
                return new FormatException("invalid JSON: " + what + " at " + Pos);
            }

            public object ReadValue()
            {
                if (Pos >= _s.Length) throw Err("unexpected end");
                var c = _s[Pos];
                switch (c)
                {
                    case '{': return ReadObject();
                    case '[': return ReadArray();
                    case '"': return ReadString();
                    case 't': Expect("true"); return true;
                    case 'f': Expect("false"); return false;
                    case 'n': Expect("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return ReadNumber();
                        throw Err("unexpected character '" + c + "'");
                }
            }

            private void Expect(string word)
            {
                if (string.CompareOrdinal(_s, Pos, word, 0, word.Length) != 0) throw Err("expected " + word);
                Pos += word.Length;
            }

            private Dictionary<string, object> ReadObject()
            {
                var d = new Dictionary<string, object>();
                Pos++;
                SkipWs();
                if (Pos < _s.Length && _s[Pos] == '}') { Pos++; return d; }
                while (true)
                {
                    SkipWs();
                    if (Pos >= _s.Length || _s[Pos] != '"') throw Err("expected a key");
                    var k = ReadString();
                    SkipWs();
                    if (Pos >= _s.Length || _s[Pos] != ':') throw Err("expected ':'");
                    Pos++;
                    SkipWs();
                    d[k] = ReadValue();
                    SkipWs();
                    if (Pos >= _s.Length) throw Err("unterminated object");
                    if (_s[Pos] == ',') { Pos++; continue; }
                    if (_s[Pos] == '}') { Pos++; return d; }
                    throw Err("expected ',' or '}'");
                }
            }

            private List<object> ReadArray()
            {
                var a = new List<object>();
                Pos++;
                SkipWs();
                if (Pos < _s.Length && _s[Pos] == ']') { Pos++; return a; }
                while (true)
                {
                    SkipWs();
                    a.Add(ReadValue());
                    SkipWs();
                    if (Pos >= _s.Length) throw Err("unterminated array");
                    if (_s[Pos] == ',') { Pos++; continue; }
                    if (_s[Pos] == ']') { Pos++; return a; }
                    throw Err("expected ',' or ']'");
                }
            }

            private string ReadString()
            {
                Pos++;
                StringBuilder sb = null;
                var start = Pos;
                while (true)
                {
                    if (Pos >= _s.Length) throw Err("unterminated string");
                    var c = _s[Pos];
                    if (c == '"')
                    {
                        string r = sb == null ? _s.Substring(start, Pos - start) : sb.Append(_s, start, Pos - start).ToString();
                        Pos++;
                        return r;
                    }
                    if (c == '\\')
                    {
                        if (sb == null) sb = new StringBuilder();
                        sb.Append(_s, start, Pos - start);
                        Pos++;
                        if (Pos >= _s.Length) throw Err("bad escape");
                        var e = _s[Pos];
                        switch (e)
                        {
                            case '"': sb.Append('"'); break;
                            case '\\': sb.Append('\\'); break;
                            case '/': sb.Append('/'); break;
                            case 'b': sb.Append('\b'); break;
                            case 'f': sb.Append('\f'); break;
                            case 'n': sb.Append('\n'); break;
                            case 'r': sb.Append('\r'); break;
                            case 't': sb.Append('\t'); break;
                            case 'u':
                                if (Pos + 4 >= _s.Length) throw Err("bad \\u escape");
                                sb.Append((char)int.Parse(_s.Substring(Pos + 1, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                                Pos += 4;
                                break;
                            default: throw Err("bad escape");
                        }
                        Pos++;
                        start = Pos;
                        continue;
                    }
                    Pos++;
                }
            }

            private object ReadNumber()
            {
                var start = Pos;
                var isFloat = false;
                if (_s[Pos] == '-') Pos++;
                while (Pos < _s.Length)
                {
                    var c = _s[Pos];
                    if (c >= '0' && c <= '9') { Pos++; continue; }
                    if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { isFloat = true; Pos++; continue; }
                    break;
                }
                var t = _s.Substring(start, Pos - start);
                long l;
                if (!isFloat && long.TryParse(t, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out l)) return l;
                double d;
                if (double.TryParse(t, NumberStyles.Float, CultureInfo.InvariantCulture, out d)) return d;
                throw Err("bad number '" + t + "'");
            }
        }
    }
}
