// __NAME__: a lock client for tumbler (clients/PROTOCOL.md), written by
// `tumbler client new`. It speaks RESP to one Redis node with Java's
// standard library only — SET NX PX to acquire, a compare-and-delete
// script to release, a compare-and-PEXPIRE script to extend — so that it
// runs as it is (run.sh compiles it once and starts it). To put your own
// lock library under tumbler, replace the three calls marked LIBRARY with
// your library's, and keep the mapping of what it says to ok, fail and
// info. tumbler's messages are flat JSON objects; the small reader below
// is enough for them (swap in your JSON library if you have one).
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.*;
import java.security.cert.*;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.*;
import javax.net.ssl.*;

public class Client {
    static final String RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    static final String EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

    /** The command never left: it had no effect. */
    static class NotSent extends IOException { NotSent(String m) { super(m); } }

    static Map<String, Object> init;
    static Socket conn;
    static InputStream in;
    static long ttl;
    static int timeout;
    static List<Object> steps;
    static int stepID;
    static final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    static final PrintStream stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    static final SecureRandom random = new SecureRandom();

    public static void main(String[] args) throws Exception {
        for (String line; (line = stdin.readLine()) != null; ) {
            Map<String, Object> req = Json.object(line);
            Map<String, Object> rep = serve(req);
            rep.put("in_reply_to", req.get("id"));
            write(rep);
        }
    }

    static void write(Map<String, Object> v) { stdout.print(Json.write(v) + "\n"); stdout.flush(); }

    static Map<String, Object> reply(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    /** Reports a step when init armed it and waits for tumbler's continue. */
    static void step(String name, String key) throws IOException {
        if (steps != null && !steps.contains(name)) return;
        write(reply("type", "step", "id", ++stepID, "step", name, "key", key));
        stdin.readLine();
    }

    static Map<String, Object> serve(Map<String, Object> req) {
        String type = (String) req.get("type"), key = (String) req.get("key");
        @SuppressWarnings("unchecked")
        Map<String, Object> lease = (Map<String, Object>) req.getOrDefault("lease", new HashMap<>());
        try {
            switch (type) {
                case "init": return open(req);
                case "acquire": return acquire(key, num(req.get("wait_ms")));
                case "release": return release(key, (String) lease.get("token"));
                case "extend": return extend(key, (String) lease.get("token"), num(req.get("ttl_ms")));
                default: return reply("type", "fail", "error", "unsupported request " + type);
            }
        } catch (NotSent e) {
            return reply("type", "fail", "error", e.getMessage());
        } catch (Exception e) { // sent, no answer: it may have taken effect
            drop();
            return reply("type", "info", "error", e.toString());
        }
    }

    static long validity(long start, long ms) { return start + ms * 1_000_000 - (ms * 1_000_000 / 100 + 2_000_000); }

    static Map<String, Object> acquire(String key, long waitMS) throws Exception {
        byte[] b = new byte[16];
        random.nextBytes(b);
        String token = HexFormat.of().formatHex(b);
        long deadline = System.nanoTime() + waitMS * 1_000_000;
        for (;;) {
            long start = System.nanoTime(); // CLOCK_MONOTONIC
            // LIBRARY: the lock library's acquire.
            if ("OK".equals(command("SET", key, token, "NX", "PX", String.valueOf(ttl)))) {
                step("after-set", key);
                return reply("type", "ok", "lease", reply("token", token, "valid_until_ns", validity(start, ttl)));
            }
            if (System.nanoTime() >= deadline) return reply("type", "fail", "error", "held by another owner", "held", true);
            Thread.sleep(10);
        }
    }

    static Map<String, Object> release(String key, String token) throws Exception {
        // LIBRARY: the lock library's release.
        if ("1".equals(command("EVAL", RELEASE, "1", key, token))) return reply("type", "ok");
        return reply("type", "fail", "error", "not held");
    }

    static Map<String, Object> extend(String key, String token, long ms) throws Exception {
        long start = System.nanoTime();
        // LIBRARY: the lock library's extend.
        if (!"1".equals(command("EVAL", EXTEND, "1", key, token, String.valueOf(ms)))) return reply("type", "fail", "error", "not held");
        return reply("type", "ok", "lease", reply("token", token, "valid_until_ns", validity(start, ms)));
    }

    /** Answers init: the node, the credentials (read from where init says they are), TLS, the TTL and the steps to report. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> open(Map<String, Object> req) {
        init = req;
        ttl = num(req.get("ttl_ms"));
        timeout = (int) num(req.get("read_timeout_ms"));
        steps = (List<Object>) req.get("steps");
        if (!"node".equals(req.get("connect"))) return reply("type", "fail", "error", "connect " + req.get("connect") + ": this client locks one node (connect node)");
        Map<String, Object> opts = (Map<String, Object>) req.get("options");
        if (opts != null && !opts.isEmpty()) return reply("type", "fail", "error", "options unknown: " + String.join(", ", opts.keySet()));
        try {
            dial();
        } catch (Exception e) {
            return reply("type", "fail", "error", e.toString());
        }
        return reply("type", "ok", "library", "__NAME__ (Java " + System.getProperty("java.version") + ", RESP over java.net)");
    }

    @SuppressWarnings("unchecked")
    static void dial() throws Exception {
        String addr = (String) ((Map<String, Object>) ((List<Object>) init.get("nodes")).get(0)).get("addr");
        int colon = addr.lastIndexOf(':');
        String host = addr.substring(0, colon);
        int port = Integer.parseInt(addr.substring(colon + 1));
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), timeout);
        Map<String, Object> t = (Map<String, Object>) init.get("tls");
        if (t != null) {
            SSLSocket ssl = (SSLSocket) tlsContext(t).getSocketFactory().createSocket(s, (String) t.getOrDefault("server_name", host), port, true);
            if (!Boolean.TRUE.equals(t.get("insecure_skip_verify"))) {
                SSLParameters p = ssl.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS");
                ssl.setSSLParameters(p);
            }
            ssl.startHandshake();
            s = ssl;
        }
        s.setSoTimeout(timeout);
        conn = s;
        in = new BufferedInputStream(s.getInputStream());
        Map<String, Object> auth = (Map<String, Object>) init.get("auth");
        if (auth != null) {
            String pw = secret((Map<String, Object>) auth.get("password"));
            if (auth.get("user") != null) command("AUTH", (String) auth.get("user"), pw);
            else command("AUTH", pw);
        }
    }

    static SSLContext tlsContext(Map<String, Object> t) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        TrustManager[] trust = null;
        if (Boolean.TRUE.equals(t.get("insecure_skip_verify"))) {
            trust = new TrustManager[] { new X509TrustManager() {
                public void checkClientTrusted(X509Certificate[] c, String a) {}
                public void checkServerTrusted(X509Certificate[] c, String a) {}
                public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
            } };
        } else if (t.get("ca_file") != null) {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (java.security.cert.Certificate c : cf.generateCertificates(new FileInputStream((String) t.get("ca_file")))) ks.setCertificateEntry("ca" + i++, c);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            trust = tmf.getTrustManagers();
        }
        KeyManager[] keys = null;
        if (t.get("cert_file") != null) { // the key in PKCS #8 PEM ("BEGIN PRIVATE KEY")
            String pem = Files.readString(Path.of((String) t.get("key_file"))).replaceAll("-----[A-Z ]+-----|\\s", "");
            byte[] der = Base64.getDecoder().decode(pem);
            PrivateKey key;
            try { key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der)); }
            catch (Exception e) { key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der)); }
            Collection<? extends java.security.cert.Certificate> chain = cf.generateCertificates(new FileInputStream((String) t.get("cert_file")));
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            ks.setKeyEntry("client", key, new char[0], chain.toArray(new java.security.cert.Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, new char[0]);
            keys = kmf.getKeyManagers();
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(keys, trust, null);
        return ctx;
    }

    /** Reads a password from the file or the variable init names. */
    static String secret(Map<String, Object> s) throws IOException {
        if (s.get("file") != null) return Files.readString(Path.of((String) s.get("file"))).replaceAll("\n+$", "");
        String v = System.getenv((String) s.get("env"));
        if (v == null) throw new IOException("the variable " + s.get("env") + " is not set");
        return v;
    }

    static void drop() {
        try { if (conn != null) conn.close(); } catch (IOException e) { }
        conn = null;
    }

    /** Sends one command and reads its reply: "OK", an integer, a bulk string, or null. An error reply throws. */
    static String command(String... args) throws IOException {
        if (conn == null) {
            try { dial(); } catch (Exception e) { throw new NotSent("not sent: " + e); }
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (String a : args) {
            byte[] v = a.getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + v.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            b.writeBytes(v);
            b.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        conn.getOutputStream().write(b.toByteArray());
        conn.getOutputStream().flush();
        String line = readLine();
        switch (line.charAt(0)) {
            case '+': case ':': return line.substring(1);
            case '-': throw new IOException("redis: " + line.substring(1));
            case '$':
                int n = Integer.parseInt(line.substring(1));
                if (n < 0) return null;
                byte[] v = in.readNBytes(n + 2);
                return new String(v, 0, n, StandardCharsets.UTF_8);
            default: throw new IOException("unexpected reply " + line);
        }
    }

    static String readLine() throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) throw new EOFException("connection closed");
            if (c != '\r') sb.append((char) c);
        }
        return sb.toString();
    }

    static long num(Object v) { return v == null ? 0 : ((Number) v).longValue(); }

    /** Just enough JSON for tumbler's messages: objects, arrays, strings, numbers, booleans and null. */
    static class Json {
        final String s;
        int i;
        Json(String s) { this.s = s; }

        @SuppressWarnings("unchecked")
        static Map<String, Object> object(String s) { return (Map<String, Object>) new Json(s).value(); }

        Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                for (ws(); s.charAt(i) != '}'; ws()) {
                    String k = (String) value();
                    ws(); i++; // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i) == ',') i++;
                }
                i++;
                return m;
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                for (ws(); s.charAt(i) != ']'; ws()) {
                    l.add(value());
                    ws();
                    if (s.charAt(i) == ',') i++;
                }
                i++;
                return l;
            }
            if (c == '"') {
                StringBuilder b = new StringBuilder();
                for (i++; s.charAt(i) != '"'; i++) {
                    char d = s.charAt(i);
                    if (d == '\\') {
                        char e = s.charAt(++i);
                        switch (e) {
                            case 'n': b.append('\n'); break;
                            case 't': b.append('\t'); break;
                            case 'r': b.append('\r'); break;
                            case 'b': b.append('\b'); break;
                            case 'f': b.append('\f'); break;
                            case 'u': b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16)); i += 4; break;
                            default: b.append(e);
                        }
                    } else b.append(d);
                }
                i++;
                return b.toString();
            }
            int start = i;
            while (i < s.length() && ",}] \t\r\n".indexOf(s.charAt(i)) < 0) i++;
            String w = s.substring(start, i);
            if (w.equals("true")) return true;
            if (w.equals("false")) return false;
            if (w.equals("null")) return null;
            if (w.contains(".") || w.contains("e") || w.contains("E")) return Double.parseDouble(w);
            return Long.parseLong(w);
        }

        void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        static String write(Object v) {
            if (v == null) return "null";
            if (v instanceof String) {
                StringBuilder b = new StringBuilder("\"");
                for (char c : ((String) v).toCharArray()) {
                    if (c == '"' || c == '\\') b.append('\\').append(c);
                    else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
                return b.append('"').toString();
            }
            if (v instanceof Map) {
                StringJoiner j = new StringJoiner(",", "{", "}");
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) j.add(write(e.getKey()) + ":" + write(e.getValue()));
                return j.toString();
            }
            if (v instanceof List) {
                StringJoiner j = new StringJoiner(",", "[", "]");
                for (Object o : (List<?>) v) j.add(write(o));
                return j.toString();
            }
            return String.valueOf(v);
        }
    }
}
