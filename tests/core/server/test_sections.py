"""Top-level sections: the core's, a module plugin's, or one that a plugin of
the deployment reads (python); anything else is refused at its key, after
every plugin had the chance to read it."""
import os
import sys

import pytest

import m0test

WSGI_PLUGIN = os.path.join(m0test.BUILD_DIR, "lib", "m0", "plugins", "m0-frontend-wsgi.so")
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")


@pytest.fixture
def check(tmp_path):
    """m0 --check on YAML text; returns (exit code, stderr)."""
    def run(text):
        path = tmp_path / "m0.yaml"
        path.write_text(text)
        result = m0test.run_m0("--config", str(path), "--check", env={"VIRTUAL_ENV": sys.prefix})
        return result.returncode, result.stderr.strip()
    return run


def test_a_section_no_plugin_reads_is_refused_at_its_key(check):
    code, err = check("frontend: {type: http}\nsessions: {}\n")
    assert code == 2
    assert err.endswith("m0.yaml:2:1: sessions: unknown section 'sessions': neither a core section nor a module "
                        "plugin (m0-module-sessions.so) found in the plugin path, and no plugin of this deployment "
                        "reads it"), err


def test_python_is_refused_when_no_plugin_runs_python(check):
    code, err = check("frontend: {type: http}\npython: {path: [src]}\n")
    assert code == 2
    assert "m0.yaml:2:1: python: unknown section 'python': neither a core section nor a module plugin" in err


@pytest.mark.skipif(not os.path.exists(WSGI_PLUGIN), reason="the frontend-wsgi plugin is not built")
def test_python_is_read_by_the_wsgi_frontend(check):
    code, err = check(f"frontend: {{type: wsgi, app: 'script_name_app:app'}}\npython: {{path: ['{APPS}']}}\n"
                      "executor: {type: inline}\n")
    assert code == 0, err


def test_a_typo_of_a_core_section_is_refused_with_a_suggestion(check):
    code, err = check("frontend: {type: http}\nmount: []\n")
    assert code == 2
    assert err.endswith("m0.yaml:2:1: mount: unknown section 'mount' (did you mean 'mounts'?)"), err
