package emulator

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/pkcs12"
)

// OAuthBasic is the Options.OAuth level (Azurite's --oauth basic) that
// accepts Microsoft Entra ID bearer tokens, checking their audience,
// issuer, not-before and expiry but not their signature.
const OAuthBasic = "basic"

// certValidity is how long NewCertificate's certificates are valid: 397
// days, the longest leaf lifetime browsers and Apple's TLS stack accept.
const certValidity = 397 * 24 * time.Hour

// Certificate is a certificate authority and a server certificate it
// signed, in PEM, for serving the emulator over HTTPS on this machine.
// The authority's private key is discarded once it has signed: trusting
// CA trusts this one server certificate and nothing else.
type Certificate struct {
	// CA is the authority's certificate: what clients trust.
	CA []byte
	// Cert is the server's certificate, followed by CA (a chain).
	Cert []byte
	// Key is the server's private key (PKCS #8). Keep it private.
	Key []byte
}

// The files Certificate.WriteFiles writes (and `tablekit emulator cert`).
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// NewCertificate makes a Certificate (ECDSA P-256) for hosts, or for
// localhost, 127.0.0.1 and ::1 when none is given. A host that parses as
// an IP address is an IP subject alternative name, any other a DNS name.
func NewCertificate(hosts ...string) (*Certificate, error) {
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("emulator: certificate authority key: %w", err)
	}
	now := time.Now().Add(-time.Hour) // a client's clock may be a little behind
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tablekit emulator local CA", Organization: []string{"tablekit emulator"}},
		NotBefore:             now,
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("emulator: certificate authority: %w", err)
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("emulator: certificate authority: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("emulator: server key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"tablekit emulator"}},
		NotBefore:    now,
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("emulator: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("emulator: server key: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return &Certificate{
		CA:   caPEM,
		Cert: append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), caPEM...),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}

// TLSConfig is a server configuration serving c.
func (c *Certificate) TLSConfig() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		return nil, fmt.Errorf("emulator: certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, nil
}

// CertPool is a pool holding c's authority: set it as a client's
// tls.Config.RootCAs to trust the emulator.
func (c *Certificate) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(c.CA)
	return p
}

// WriteFiles writes c to dir (created if missing) as CAFile, CertFile
// and KeyFile; the key is readable by its owner only.
func (c *Certificate) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{CAFile, c.CA, 0o644}, {CertFile, c.Cert, 0o644}, {KeyFile, c.Key, 0o600}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return fmt.Errorf("emulator: %w", err)
		}
	}
	return nil
}

// serverTLS is the TLS configuration o asks for, nil for plain HTTP, and
// the pool that trusts it when the emulator made the certificate itself.
func serverTLS(o *Options) (*tls.Config, *x509.CertPool, error) {
	var cfg *tls.Config
	var pool *x509.CertPool
	switch {
	case o.TLS != nil:
		if o.CertFile != "" {
			return nil, nil, errors.New("emulator: Options.TLS and Options.CertFile both set: choose one")
		}
		cfg = o.TLS.Clone()
	case o.CertFile != "":
		pair, err := loadCertificate(o.CertFile, o.KeyFile, o.CertPassword)
		if err != nil {
			return nil, nil, err
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{pair}}
	case o.KeyFile != "" || o.CertPassword != "":
		return nil, nil, errors.New("emulator: a key file or certificate password without a certificate file (Options.CertFile)")
	case o.HTTPS:
		c, err := NewCertificate()
		if err != nil {
			return nil, nil, err
		}
		if cfg, err = c.TLSConfig(); err != nil {
			return nil, nil, err
		}
		pool = c.CertPool()
	default:
		return nil, nil, nil
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	// HTTP/1.1 only: the Blob and Queue services read the request head
	// themselves (internal/headcase), which HTTP/2's frames would hide.
	cfg.NextProtos = []string{"http/1.1"}
	return cfg, pool, nil
}

// loadCertificate reads a PEM certificate (chain) and key, or, when
// keyFile is empty, a PKCS #12 (PFX) file opened with password.
func loadCertificate(certFile, keyFile, password string) (tls.Certificate, error) {
	if keyFile != "" {
		if password != "" {
			return tls.Certificate{}, errors.New("emulator: a certificate password is for a PFX certificate, given without a key file")
		}
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("emulator: certificate %s and key %s: %w", certFile, keyFile, err)
		}
		return pair, nil
	}
	data, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("emulator: %w", err)
	}
	// pkcs12.ToPEM, not Decode: a PFX usually holds its chain too.
	blocks, err := pkcs12.ToPEM(data, password)
	if err != nil {
		// x/crypto/pkcs12 reads the legacy encryption only (3DES, RC2,
		// SHA-1 MAC), not OpenSSL 3's default (AES, SHA-256 MAC).
		return tls.Certificate{}, fmt.Errorf("emulator: PFX certificate %s (a PEM certificate needs a key file; a PFX must use the legacy encryption, openssl pkcs12 -export -legacy): %w", certFile, err)
	}
	var certPEM, keyPEM []byte
	for _, b := range blocks {
		if b.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		} else {
			keyPEM = append(keyPEM, pem.EncodeToMemory(b)...)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("emulator: PFX certificate %s: %w", certFile, err)
	}
	return pair, nil
}

// HTTPClient returns an HTTP client for the emulator's services: one
// that trusts RootCAs when the emulator made its certificate
// (Options.HTTPS), else one with the system's roots. Give it to an SDK
// as its transport (azcore's ClientOptions.Transport).
func (i *Instance) HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if i.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: i.RootCAs}
	}
	return &http.Client{Transport: t}
}

// connKey is the context key of a request's connection (withConn).
type connKey struct{}

// withConn is the servers' http.Server.ConnContext: it keeps each
// connection in its requests' context, for withTLSState.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// withTLSState gives each request h serves over a TLS connection
// that net/http does not see as one (a *tls.Conn beneath headcase's
// connection) its TLS state, as net/http gives it on a bare *tls.Conn: a
// SAS that allows HTTPS only (spr=https) holds, and listings name https.
func withTLSState(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			c, _ := r.Context().Value(connKey{}).(net.Conn)
			for c != nil {
				if tc, ok := c.(*tls.Conn); ok {
					st := tc.ConnectionState()
					r.TLS = &st
					break
				}
				u, ok := c.(interface{ NetConn() net.Conn })
				if !ok {
					break
				}
				c = u.NetConn()
			}
		}
		h.ServeHTTP(w, r)
	})
}
