"""Builds the paretonav wheel: the package, the Go binary, a console script.

The wheel is written directly (zipfile, with its RECORD of sha256 digests),
because its contents are fixed and platform-specific (a static Go binary)
and the build must work offline: no setuptools or PyPI download involved.
Also a PEP 517 backend (build_wheel), so `pip wheel --no-build-isolation --no-deps`
builds the same file; it runs `go build` when no --binary is given.

    python3 wheel_builder.py --binary BUILD/paretonav --out DIST [--plat TAG]
"""

import argparse
import ast
import base64
import hashlib
import io
import os
import platform
import subprocess
import sys
import tempfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11: the fields we need, read by hand
    tomllib = None

HERE = os.path.dirname(os.path.abspath(__file__))
# A fixed timestamp: the same inputs give the same wheel (zip needs >= 1980).
EPOCH = (1980, 1, 1, 0, 0, 0)


def project():
    """pyproject.toml's [project] table, with its version read from the package (version()) when dynamic."""
    path = os.path.join(HERE, "pyproject.toml")
    if not tomllib:
        raise SystemExit("wheel_builder: Python 3.11 or newer is needed to read pyproject.toml")
    with open(path, "rb") as f:
        p = tomllib.load(f)["project"]
    if "version" in p.get("dynamic", []):
        p["version"] = version(p["name"])
    return p


def version(name):
    """The package's __version__, read from NAME/_version.py without importing the package."""
    path = os.path.join(HERE, name, "_version.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit("wheel_builder: %s sets no __version__" % path)


def plat_tag(goos=None, goarch=None):
    """The platform tag of a static (CGO_ENABLED=0) Go binary."""
    goos = goos or {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(sys.platform, sys.platform)
    m = platform.machine().lower()
    goarch = goarch or {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(goarch, goarch)
    if goos == "linux":
        # No libc dependency at all: any manylinux or musllinux system runs it.
        return "manylinux_2_17_{0}.manylinux2014_{0}.musllinux_1_1_{0}".format(arch)
    if goos == "darwin":
        return {"amd64": "macosx_10_12_x86_64", "arm64": "macosx_11_0_arm64"}[goarch]
    if goos == "windows":
        return {"amd64": "win_amd64", "arm64": "win_arm64"}[goarch]
    raise SystemExit("wheel_builder: no wheel platform tag for %s/%s" % (goos, goarch))


def metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["description"], "Requires-Python: " + p["requires-python"]]
    lines += ["Requires-Dist: " + d for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s ; extra == "%s"' % (d, extra) for d in deps]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(HERE, p.get("readme", "README.md")), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def build(binary, out_dir, plat=None):
    p = project()
    name, version = p["name"], p["version"]
    plat = plat or plat_tag()
    tag = "py3-none-" + plat
    dist_info = "%s-%s.dist-info" % (name, version)
    files = []  # (archive name, bytes, mode)
    pkg = os.path.join(HERE, name)
    for root, dirs, names in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "bin"))
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":
                full = os.path.join(root, n)
                with open(full, "rb") as f:
                    files.append((os.path.relpath(full, HERE).replace(os.sep, "/"), f.read(), 0o644))
    exe = "paretonav.exe" if plat.startswith("win") else "paretonav"
    with open(binary, "rb") as f:
        files.append(("%s/bin/%s" % (name, exe), f.read(), 0o755))
    files.append((dist_info + "/METADATA", metadata(p).encode(), 0o644))
    wheel = "Wheel-Version: 1.0\nGenerator: paretonav wheel_builder\nRoot-Is-Purelib: false\n"
    wheel += "".join("Tag: py3-none-%s\n" % t for t in plat.split("."))
    files.append((dist_info + "/WHEEL", wheel.encode(), 0o644))
    scripts = "".join("%s = %s\n" % kv for kv in p.get("scripts", {}).items())
    files.append((dist_info + "/entry_points.txt", ("[console_scripts]\n" + scripts).encode(), 0o644))
    record = io.StringIO()
    for arc, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (arc, digest, len(data)))
    record.write(dist_info + "/RECORD,,\n")
    files.append((dist_info + "/RECORD", record.getvalue().encode(), 0o644))
    os.makedirs(out_dir, exist_ok=True)
    fname = "%s-%s-%s.whl" % (name, version, tag)
    path = os.path.join(out_dir, fname)
    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for arc, data, mode in files:
            zi = zipfile.ZipInfo(arc, EPOCH)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)
    return fname


def go_build(dest):
    """Builds the binary from the repository above this folder."""
    env = dict(os.environ, CGO_ENABLED="0")
    subprocess.run(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", dest, "."],
                   cwd=os.path.dirname(HERE), env=env, check=True)


# PEP 517 hooks.
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "paretonav")
        go_build(exe)
        return build(exe, wheel_directory)


def build_sdist(sdist_directory, config_settings=None):
    raise NotImplementedError("paretonav ships platform wheels only: build one with python/build_wheel.sh")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True, help="the paretonav executable to bundle")
    ap.add_argument("--out", required=True, help="folder to write the wheel to")
    ap.add_argument("--plat", help="platform tag (default: this machine's, or GOOS/GOARCH's)")
    a = ap.parse_args()
    plat = a.plat or plat_tag(os.environ.get("GOOS") or None, os.environ.get("GOARCH") or None)
    print(os.path.join(a.out, build(a.binary, a.out, plat)))
