"""m0's TLS defaults graded by the tools operators use: sslyze checks a TLS
listener against Mozilla's "intermediate" configuration (exit 0), and
testssl.sh reports no finding of severity MEDIUM or above. The deployment
is what `tls: {cert, key}` gives, nothing more; its certificate is what a
public CA issues (90 days, a CRL distribution point, a chain to a CA the
tools are told to trust), and its page sends the HTTP security headers
testssl.sh also grades, which are the application's to send."""
import datetime
import ipaddress
import json
import os
import shutil
import subprocess
import sys

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import m0test

SEVERITIES = ("MEDIUM", "HIGH", "CRITICAL")
SECURITY_HEADERS = {
    "Strict-Transport-Security": "max-age=63072000",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'",
    "Referrer-Policy": "no-referrer",
}


def public_ca_like_certificate(directory, key_type):
    """A CA and a leaf it issued for localhost and 127.0.0.1, shaped like a
    public CA's: 90 days, serverAuth, a CRL distribution point."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def new_key():
        return ec.generate_private_key(ec.SECP256R1()) if key_type == "ecdsa" else \
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_key, leaf_key = new_key(), new_key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "m0 test root")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=90))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.KeyUsage(True, False, key_type == "rsa", False, False, False, False, False, False),
                           critical=True)
            .add_extension(x509.CRLDistributionPoints([x509.DistributionPoint(
                [x509.UniformResourceIdentifier("http://crl.example.test/root.crl")], None, None, None)]),
                critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    os.makedirs(directory, exist_ok=True)
    paths = {name: os.path.join(directory, name) for name in ("ca.pem", "cert.pem", "key.pem")}
    with open(paths["ca.pem"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert.pem"], "wb") as f:
        f.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(paths["key.pem"], "wb") as f:
        f.write(leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return paths


def serve(m0_server, paths):
    headers = ", ".join(f"{k}: \"{v}\"" for k, v in SECURITY_HEADERS.items())
    config = (
        "frontend:\n"
        "  type: http\n"
        "  routes:\n"
        f"    - {{path: /, body: 'Hello, World!', headers: {{Content-Type: text/plain, {headers}}}}}\n"
        f"tls:\n  cert: {paths['cert.pem']}\n  key: {paths['key.pem']}\n"
    )
    return m0_server(config, "--listen", "127.0.0.1:0 tls")


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa"])
def test_sslyze_finds_the_defaults_compliant_with_mozilla_intermediate(m0_server, tmp_path, key_type):
    paths = public_ca_like_certificate(tmp_path, key_type)
    server = serve(m0_server, paths)
    out = subprocess.run([sys.executable, "-m", "sslyze", "--mozilla_config=intermediate",
                          f"localhost:{server.ports[1]}{{127.0.0.1}}", "--certinfo_ca_file", paths["ca.pem"]],
                         capture_output=True, text=True, timeout=m0test.scaled(300))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "is compliant with Mozilla's" in out.stdout or "OK - Compliant" in out.stdout, out.stdout[-3000:]
    assert server.stop() == 0


def test_testssl_reports_nothing_of_medium_severity_or_above(m0_server, tmp_path):
    testssl = shutil.which("testssl") or shutil.which("testssl.sh")
    if not testssl:
        pytest.fail("testssl.sh is not installed (scripts/setup installs Debian's testssl.sh)")
    paths = public_ca_like_certificate(tmp_path, "ecdsa")
    server = serve(m0_server, paths)
    report = tmp_path / "testssl.json"
    out = subprocess.run([testssl, "--quiet", "--color", "0", "--warnings", "batch", "--severity", "MEDIUM",
                          "--add-ca", paths["ca.pem"], "--ip", "127.0.0.1", "--jsonfile", str(report),
                          f"https://localhost:{server.ports[1]}/"],
                         capture_output=True, text=True, timeout=m0test.scaled(600))
    assert report.exists(), out.stdout[-3000:] + out.stderr[-2000:]
    findings = [f for f in json.loads(report.read_text()) if f.get("severity") in SEVERITIES]
    assert not findings, "\n".join(f"{f['severity']} {f['id']}: {f['finding']}" for f in findings)
    assert server.stop() == 0
