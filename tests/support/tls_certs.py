"""Certificates for the TLS tests, made at test time with trustme: a CA and
a server certificate it issued for localhost and 127.0.0.1, written where m0
reads them; client SSL contexts that trust that CA."""
import os
import ssl

import trustme


class ServerCertificate:
    def __init__(self, directory, ca=None, names=("localhost", "127.0.0.1"), key_type=trustme.KeyType.ECDSA):
        os.makedirs(directory, exist_ok=True)
        self.directory = str(directory)
        self.ca = ca or trustme.CA(key_type=key_type)
        self.leaf = self.ca.issue_cert(*names, key_type=key_type)
        self.cert = os.path.join(self.directory, "cert.pem")
        self.key = os.path.join(self.directory, "key.pem")
        self.ca_file = os.path.join(self.directory, "ca.pem")
        with open(self.cert, "wb") as f:
            for pem in self.leaf.cert_chain_pems:
                f.write(pem.bytes())
        self.leaf.private_key_pem.write_to_path(self.key)
        self.ca.cert_pem.write_to_path(self.ca_file)

    def leaf_der(self):
        return ssl.PEM_cert_to_DER_cert(self.leaf.cert_chain_pems[0].bytes().decode())

    def tls_section(self, **extra):
        """The YAML `tls:` section serving this certificate, with `extra` keys."""
        lines = ["tls:", f"  cert: {self.cert}", f"  key: {self.key}"]
        lines += [f"  {key}: {value}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def client_context(self):
        """A client context that trusts this CA and checks the name."""
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx
