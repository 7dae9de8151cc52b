"""Shared fixtures. A test that needs a tool (torch, the bundled binary) skips
where the tool is missing, except under CI=true, where it fails: CI installs
every tool these tests need (.ci/run)."""

import importlib
import os

import pytest


def need(module: str):
    """Imports module, or skips the test (fails under CI=true) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") == "true":
            pytest.fail("%s is required under CI=true: %s" % (module, e))
        pytest.skip("%s is not installed" % module)


def repo_file(*parts):
    """The path of a file of the paretonav repository: under PARETONAV_REPO
    (set by .ci/run, whose copy of these tests runs outside the source tree),
    else beside this folder in a checkout. Skips when there is none, except
    under CI=true, where it fails."""
    roots = [os.environ.get("PARETONAV_REPO"), os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")]
    for root in roots:
        if root and os.path.exists(os.path.join(root, *parts)):
            return os.path.join(root, *parts)
    msg = "%s is not found under PARETONAV_REPO (%r) or a checkout" % (os.path.join(*parts), roots[0])
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true: " + msg)
    pytest.skip(msg)


def torchscript(torch):
    """torch.onnx.export's keywords for the TorchScript exporter: dynamo=False where the default is the
    dynamo exporter (torch 2.9+), which merges no initializers and names them otherwise."""
    import inspect

    return {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


@pytest.fixture(scope="session")
def torch():
    return need("torch")


@pytest.fixture(scope="session")
def binary():
    """Fails (skips outside CI) when the installed package carries no binary."""
    import paretonav._binary as b
    from paretonav.errors import ParetonavError

    try:
        return b.binary()
    except ParetonavError as e:
        if os.environ.get("CI") == "true":
            pytest.fail(str(e))
        pytest.skip(str(e))


def make_two_head(torch):
    """A small two-head conv net with BatchNorm: seg (4 classes, log-probabilities) and depth."""
    nn, F = torch.nn, torch.nn.functional

    class TwoHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                     nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.seg = nn.Conv2d(8, 4, 1)
            self.depth = nn.Conv2d(8, 1, 1)

        def forward(self, x):
            h = self.enc(x)
            return F.log_softmax(self.seg(h), dim=1), self.depth(h)

    return TwoHead


def make_data(torch, n, seed):
    """Inputs and targets a fixed random 'teacher' defines; -1 marks ignored pixels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 8, 8, generator=g)
    seg = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + 2 * (x[:, 2] > 0.5).long()
    seg[:, 0, 0] = -1
    depth = (x.mean(1, keepdim=True) + 0.1 * torch.randn(n, 1, 8, 8, generator=g)).float()
    return {"x": x, "seg": seg, "depth_t": depth}


def torch_losses(torch, model, data):
    """PyTorch's own losses of the tasks in TASKS (eval mode, the whole set at once)."""
    F = torch.nn.functional
    model.eval()
    with torch.no_grad():
        logp, depth = model(data["x"])
        return {"seg": F.nll_loss(logp, data["seg"], ignore_index=-1).item(),
                "depth": F.l1_loss(depth, data["depth_t"]).item()}


TASKS = ["seg:nll:seg_logp:seg:ignore_index=-1", "depth:l1:depth:depth_t"]


@pytest.fixture(scope="session")
def trained(torch):
    """(model class, trained state_dict, train data, val data): trained briefly in train mode,
    so that the BatchNorm running statistics are the data's, not 0 and 1."""
    TwoHead = make_two_head(torch)
    torch.manual_seed(0)
    m = TwoHead()
    train, val = make_data(torch, 64, 1), make_data(torch, 32, 2)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    F = torch.nn.functional
    m.train()
    for i in range(20):
        b = slice((i * 16) % 64, (i * 16) % 64 + 16)
        logp, d = m(train["x"][b])
        loss = F.nll_loss(logp, train["seg"][b], ignore_index=-1) + F.l1_loss(d, train["depth_t"][b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return TwoHead, {k: v.clone() for k, v in m.state_dict().items()}, train, val


@pytest.fixture
def model(trained):
    TwoHead, sd, _, _ = trained
    m = TwoHead()
    m.load_state_dict(sd)
    return m.eval()
