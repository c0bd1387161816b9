"""test_dynamo_hf_patterns.py - ptc.compile on small mock classes reproducing
what HuggingFace BERT/GPT-2 do (transformers is not installed here):
- an OrderedDict (or another dict/list subclass without a Python
  __bool__/__len__) checked for truth or measured with len() inside the
  trace (nn.Module.__call__'s `if self._forward_hooks ...`);
- an nn.Module subclass with a Python __call__ override that checks things
  and returns super().__call__(*args, **kwargs) (GradientCheckpointingLayer);
- a config object whose class defines a Python __getattribute__ mapping
  attribute names (PretrainedConfig), read with `.x`, getattr(.., default)
  and hasattr() in forward; constants are guarded through the same getattr,
  so changing the config after compiling recompiles.
Each case compares ptc.compile(model)(x) with eager and counts graphs and
breaks through ptc.explain.
"""

import collections

import pytest
import torch
import torch.nn as nn

import ptc
from dynamo_util import Delta, assert_same, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def explain(fn, *args):
    e = ptc.explain(fn, *args)
    ptc.reset()
    return e


# ---- 1. truth value / len of dict and list subclasses -----------------------------------------

class HookDictModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.extra = collections.OrderedDict()

    def forward(self, x):
        y = self.lin(x)
        if self.extra:
            y = y * 2.0
        if not self.extra:
            y = y + 1.0
        return y - len(self.extra)


class MyDict(dict):
    pass


class MyList(list):
    pass


class SubclassModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = MyDict()
        self.l = MyList([1, 2])

    def forward(self, x):
        if self.d:
            x = x + 10.0
        if self.l:
            x = x * 3.0
        return x + len(self.l)


class LenDict(dict):
    def __len__(self):
        return 0


class UserLenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = LenDict(a=1)

    def forward(self, x):
        x = x + 1.0
        if self.d:
            x = x * 2.0
        return x - 1.0


def test_ordered_dict_truth():
    m = HookDictModel().eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    e = explain(m, x)
    assert e.graph_count == 1, str(e)
    assert e.break_reasons == [], str(e)


def test_ordered_dict_truth_guard():
    m = HookDictModel().eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    m.extra["k"] = 1  # truth and len change: must recompile
    with Delta() as d:
        out = cm(x)
    assert_same(out, m(x))
    assert d.graphs == 1, d
    m.extra["j"] = 2  # same truth, new len
    assert_same(cm(x), m(x))
    m.extra.clear()
    assert_same(cm(x), m(x))


def test_dict_list_subclass_truth():
    m = SubclassModel()
    x = torch.randn(3)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    e = explain(m, x)
    assert e.graph_count == 1 and e.break_reasons == [], str(e)
    m.d["a"] = 1
    m.l.append(3)
    assert_same(cm(x), m(x))
    m.l.clear()
    assert_same(cm(x), m(x))


def test_user_len_still_breaks():
    m = UserLenModel()
    x = torch.randn(3)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    e = explain(m, x)
    assert any("user __bool__/__len__" in r for r, _ in e.break_reasons), str(e)


# ---- 2. a Python __call__ override calling super().__call__ -----------------------------------

class CheckpointLayer(nn.Module):
    """Like transformers' GradientCheckpointingLayer."""
    gradient_checkpointing = False

    def __call__(self, *args, **kwargs):
        if self.gradient_checkpointing and self.training:
            kwargs = dict(kwargs)
        return super().__call__(*args, **kwargs)


class Layer(CheckpointLayer):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, scale=1.0):
        return torch.relu(self.lin(x)) * scale


class Stack(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, scale=0.5)
        return x + 1.0


class ExplicitCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def __call__(self, x):
        return nn.Module.__call__(self, x) + 1.0

    def forward(self, x):
        return self.lin(x) * 2.0


class UsesExplicit(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = ExplicitCall()

    def forward(self, x):
        return self.inner(x) - 3.0


def test_call_override_inlined():
    m = Stack().eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    e = explain(m, x)
    assert e.graph_count == 1, str(e)
    assert e.break_reasons == [], str(e)
    assert_same(ptc.compile(m, fullgraph=True)(x), m(x), rtol=1e-4, atol=1e-5)


def test_call_override_direct_module():
    # the overriding module itself is the compiled one: its forward is captured
    m = Layer().eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)


def test_explicit_module_call():
    m = UsesExplicit().eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    e = explain(m, x)
    assert e.graph_count == 1 and e.break_reasons == [], str(e)


def test_call_override_hooks_break():
    m = Stack().eval()
    seen = []
    h = m.layers[1].register_forward_hook(lambda mod, inp, out: seen.append(1))
    try:
        x = torch.randn(2, 8)
        cm = ptc.compile(m)
        ref = m(x)
        n = len(seen)
        assert_same(cm(x), ref, rtol=1e-4, atol=1e-5)
        assert len(seen) == n + 1  # the hook ran
        e = explain(m, x)
        assert any("forward_hooks" in r or "hook" in r for r, _ in e.break_reasons), str(e)
    finally:
        h.remove()


def test_call_override_attribute_guard():
    m = Stack().train()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    m.layers[0].gradient_checkpointing = True  # the override takes its other branch
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)


# ---- 3. configs with a Python __getattribute__ -----------------------------------------------

class Config:
    """Like transformers' PretrainedConfig: names mapped in __getattribute__."""
    attribute_map = {"hidden_size": "n_embd", "scale_name": "scale"}

    def __init__(self, **kw):
        self.n_embd = 8
        self.scale = 2.0
        self.act = "relu"
        self.use_bias_shift = True
        self.eps = None
        self.dims = (1, 2)
        self.table = [1, 2]  # mutable: not usable as a guarded constant
        self._impl = "eager"
        self.__dict__.update(kw)

    @property
    def attn_impl(self):  # like PretrainedConfig._attn_implementation
        return self._impl

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


class GetattrConfig:
    """__getattr__ only: missing names come from a defaults dict."""
    defaults = {"shift": 3.0}

    def __init__(self):
        self.scale = 1.5

    def __getattr__(self, key):
        d = type(self).defaults
        if key in d:
            return d[key]
        raise AttributeError(key)


class ConfigModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.lin = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        c = self.config
        y = self.lin(x) * c.scale_name
        if c.act == "relu":
            y = torch.relu(y)
        else:
            y = torch.tanh(y)
        if getattr(c, "use_bias_shift", False):
            y = y + 1.0
        if getattr(c, "missing_option", None) is not None:
            y = y * 100.0
        if hasattr(c, "extra_scale"):
            y = y * c.extra_scale
        if c.eps is None:
            y = y - 0.5
        if c.attn_impl != "eager":
            y = y * 0.25
        return y + c.dims[1] + c.hidden_size


class GetattrModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = GetattrConfig()

    def forward(self, x):
        y = x * self.config.scale + self.config.shift
        if hasattr(self.config, "nothing"):
            y = y * 0.0
        return y


class TableModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()

    def forward(self, x):
        return x + self.config.table[0]


def test_config_getattribute():
    m = ConfigModel(Config()).eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    with Delta() as d:
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    assert d.graphs == 0 and d.recompiles == 0, d
    e = explain(m, x)
    assert e.graph_count == 1, str(e)
    assert e.break_reasons == [], str(e)
    assert any("NOT_HASATTR" in g for g in e.guards), e.guards
    assert_same(ptc.compile(m, fullgraph=True)(x), m(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("change", [
    ("scale", 3.0),            # through the mapped name scale_name
    ("act", "tanh"),
    ("use_bias_shift", False),
    ("missing_option", 1),     # appears: getattr default no longer taken
    ("extra_scale", 4.0),      # appears: hasattr now True
    ("eps", 1e-5),
    ("dims", (1, 5)),
    ("_impl", "sdpa"),         # read through a property
])
def test_config_guard_recompiles(change):
    cfg = Config()
    m = ConfigModel(cfg).eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    setattr(cfg, *change)
    ref = m(x)
    with Delta() as d:
        out = cm(x)
    assert_same(out, ref, rtol=1e-4, atol=1e-5)
    assert d.graphs >= 1, d


def test_config_attribute_removed():
    cfg = Config(extra_scale=2.0)
    m = ConfigModel(cfg).eval()
    x = torch.randn(2, 8)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    del cfg.extra_scale
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)


def test_getattr_only_config():
    m = GetattrModel()
    x = torch.randn(4)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    e = explain(m, x)
    assert e.graph_count == 1 and e.break_reasons == [], str(e)
    GetattrConfig.defaults["shift"] = -1.0
    try:
        assert_same(cm(x), m(x))
        m.config.nothing = 1
        assert_same(cm(x), m(x))
    finally:
        GetattrConfig.defaults["shift"] = 3.0


def test_config_mutable_value_breaks():
    m = TableModel()
    x = torch.randn(4)
    cm = ptc.compile(m)
    assert_same(cm(x), m(x))
    e = explain(m, x)
    assert any("custom getattr" in r for r, _ in e.break_reasons), str(e)
    m.config.table[0] = 7
    assert_same(cm(x), m(x))
