"""`m0 --check` on the `tls:` section, with certificates made at test time
(trustme): a good section passes and is printed (paths, never a password);
a key of another certificate, an expired certificate, client_auth without a
CA and a wrong key password exit 2 naming the files and why; a certificate
close to expiry passes with a warning."""
import datetime

import pytest

import m0test

trustme = pytest.importorskip("trustme")
from cryptography.hazmat.primitives import serialization  # noqa: E402 (trustme's dependency)

CONFIG_ERROR = 2
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def ca():
    return trustme.CA().create_child_ca()


def write_leaf(directory, name, leaf, password=None):
    """The chain (leaf first) and the key as PEM files named after `name`."""
    cert = directory / f"{name}.crt"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key = directory / f"{name}.key"
    if password is None:
        key.write_bytes(leaf.private_key_pem.bytes())
    else:
        private = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
        key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.BestAvailableEncryption(password.encode())))
    return cert, key


def days_from_now(days):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)


def check(tmp_path, tls_yaml):
    config = tmp_path / "m0.yaml"
    config.write_text("server:\n  listen: ['127.0.0.1:0']\ntls:\n" + tls_yaml)
    return m0test.run_m0("--config", str(config), "--check")


def tls_section(stdout):
    """The lines of --check's `tls:` section."""
    lines = stdout.splitlines()
    start = lines.index("tls:")
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return "\n".join(lines[start:end])


def test_a_good_section_passes_and_is_printed_without_its_password(tmp_path, ca):
    cert, key = write_leaf(tmp_path, "site", ca.issue_cert("site.example"), password=PASSWORD)
    out = check(tmp_path, f"  cert: site.crt\n  key: site.key\n  password: '{PASSWORD}'\n"
                          f"  sni:\n    - {{cert: site.crt, key: site.key, password: '{PASSWORD}'}}\n")
    assert out.returncode == 0, out.stderr
    section = tls_section(out.stdout)
    assert f"cert: {cert}" in section and f"key: {key}" in section  # relative to the config file's directory
    assert "min_version: \"1.2\"" in section and "session_tickets: true" in section
    assert PASSWORD not in out.stdout and PASSWORD not in out.stderr
    assert "configuration OK" in out.stderr


def test_a_key_of_another_certificate_is_refused_naming_both_files(tmp_path, ca):
    cert, _ = write_leaf(tmp_path, "a", ca.issue_cert("a.example"))
    _, other_key = write_leaf(tmp_path, "b", ca.issue_cert("b.example"))
    out = check(tmp_path, "  cert: a.crt\n  key: b.key\n")
    assert out.returncode == CONFIG_ERROR
    assert f"tls.key '{other_key}' does not match the certificate in tls.cert '{cert}'" in out.stderr
    assert "m0.yaml:5:8:" in out.stderr  # at the key's line


def test_an_expired_certificate_is_refused_with_its_date(tmp_path, ca):
    leaf = ca.issue_cert("old.example", not_before=days_from_now(-60), not_after=days_from_now(-1))
    cert, _ = write_leaf(tmp_path, "old", leaf)
    out = check(tmp_path, "  cert: old.crt\n  key: old.key\n")
    assert out.returncode == CONFIG_ERROR
    assert f"tls.cert '{cert}'" in out.stderr and "expired on" in out.stderr


def test_client_auth_without_a_ca_is_refused(tmp_path, ca):
    write_leaf(tmp_path, "site", ca.issue_cert("site.example"))
    out = check(tmp_path, "  cert: site.crt\n  key: site.key\n  client_auth: required\n")
    assert out.returncode == CONFIG_ERROR
    assert "tls.client_auth is required but tls.ca is not set" in out.stderr


def test_a_wrong_key_password_is_refused(tmp_path, ca):
    _, key = write_leaf(tmp_path, "site", ca.issue_cert("site.example"), password=PASSWORD)
    (tmp_path / "password").write_text("not it\n")
    out = check(tmp_path, "  cert: site.crt\n  key: site.key\n  password_file: password\n")
    assert out.returncode == CONFIG_ERROR
    assert f"tls.key '{key}': cannot decrypt the key: wrong password" in out.stderr
    assert str(tmp_path / "password") in out.stderr
    assert "not it" not in out.stderr


def test_a_certificate_expiring_within_14_days_passes_with_a_warning(tmp_path, ca):
    cert, _ = write_leaf(tmp_path, "soon", ca.issue_cert("soon.example", not_after=days_from_now(5)))
    out = check(tmp_path, "  cert: soon.crt\n  key: soon.key\n")
    assert out.returncode == 0, out.stderr
    assert "warning" in out.stderr and f"tls.cert '{cert}'" in out.stderr and "within 14 days" in out.stderr


def test_mistakes_in_the_section_are_located_and_a_typo_gets_the_nearest_key(tmp_path, ca):
    write_leaf(tmp_path, "site", ca.issue_cert("site.example"))
    out = check(tmp_path, "  cert: site.crt\n  key: site.key\n  min_version: '1.1'\n  session_ticket: false\n")
    assert out.returncode == CONFIG_ERROR
    assert "m0.yaml:6:16: tls.min_version: expected one of 1.2, 1.3, found '1.1'" in out.stderr
    assert "tls.session_ticket: unknown key 'session_ticket' (did you mean 'session_tickets'?)" in out.stderr
    missing = check(tmp_path, "  key: site.key\n")
    assert missing.returncode == CONFIG_ERROR and "tls.cert: required" in missing.stderr


def test_a_section_no_listener_uses_is_a_warning(tmp_path, ca):
    write_leaf(tmp_path, "site", ca.issue_cert("site.example"))
    out = check(tmp_path, "  cert: site.crt\n  key: site.key\n")
    assert out.returncode == 0, out.stderr
    assert "tls: no listener in server.listen is marked tls" in out.stderr


def test_an_sni_chain_is_checked_and_its_errors_located_at_its_keys(tmp_path, ca):
    write_leaf(tmp_path, "site", ca.issue_cert("site.example"))
    write_leaf(tmp_path, "api", ca.issue_cert("api.example"))
    out = check(tmp_path, "  cert: site.crt\n  key: site.key\n  sni:\n    - cert: api.crt\n      key: site.key\n")
    assert out.returncode == CONFIG_ERROR
    assert f"m0.yaml:8:12: tls.sni[0].key '{tmp_path / 'site.key'}' does not match the certificate in " \
           f"tls.sni[0].cert '{tmp_path / 'api.crt'}'" in out.stderr
