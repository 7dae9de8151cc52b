"""The installed wheel: the package comes from site-packages, the console script runs the bundled binary."""

import os
import subprocess
import sys

import paretonav


def test_installed_package_and_console_script(binary):
    pkg = os.path.dirname(os.path.abspath(paretonav.__file__))
    if os.environ.get("CI") == "true":  # .ci/run installs the wheel and runs a copy of these tests
        assert pkg.endswith(os.path.join("site-packages", "paretonav")), pkg
    assert binary == os.path.join(pkg, "bin", "paretonav")
    script = os.path.join(os.path.dirname(sys.executable), "paretonav")
    if os.environ.get("CI") == "true":
        assert os.path.isfile(script), script
    if os.path.isfile(script):
        p = subprocess.run([script, "tune", "--help"], capture_output=True, text=True)
        assert p.returncode == 0 and "paretonav tune" in p.stdout
        p = subprocess.run([script, "inspect", "/nonexistent.onnx"], capture_output=True, text=True)
        assert p.returncode != 0 and "/nonexistent.onnx" in p.stderr


def test_import_leaves_torch_alone():
    code = "import sys, paretonav; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
