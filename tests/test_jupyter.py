"""JupyterLab as `make install` sets it up: a server started from the repository serves the notebook
sources (`notebooks/*.py`, jupytext percent files) as notebooks, and its settings open a .py file
with the Jupytext notebook viewer by default (jupyter/overrides.d/cod.json)."""

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a server start

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on localhost serving the repository: (its URL, its token)."""
    port, token = free_port(), secrets.token_hex(16)
    home = tmp_path_factory.mktemp("home")  # no user settings or runtime files of this machine's
    env = {**os.environ, "HOME": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTER_CONFIG_DIR": str(home / ".jupyter"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
               *(["--allow-root"] if os.geteuid() == 0 else [])]  # CI runs as root
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                get(url, "/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, server.stderr.read()[-3000:]
                time.sleep(0.25)
        else:
            pytest.fail("the server did not answer within 30 s")
        yield url, token
    finally:
        server.terminate()
        server.wait(timeout=30)


def get(url: str, path: str, token: str) -> dict:
    request = urllib.request.Request(url + path, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_notebook_source_is_served_as_a_notebook(lab):
    """The contents API (what JupyterLab opens a file through) gives a .py source as a notebook, its
    cells those of the percent file, the parameters cell tagged."""
    url, token = lab
    model = get(url, "/api/contents/notebooks/a4_variance_dynamics.py", token)
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    assert any("parameters" in cell["metadata"].get("tags", []) for cell in cells)


def test_a_py_file_opens_with_the_jupytext_notebook_viewer_by_default(lab):
    url, token = lab
    settings = get(url, "/lab/api/settings/@jupyterlab/docmanager-extension:plugin", token)
    viewers = settings["schema"]["properties"]["defaultViewers"]["default"]
    assert viewers.get("python") == "Jupytext Notebook", viewers
