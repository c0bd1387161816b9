"""test_dynamo_bytecode.py - the capture's bytecode layer (issue 6):
dyn_bytecode.c (decode / assemble: EXTENDED_ARG, caches, jumps, exception
and line tables, stack size) through _C._dyn_decode / _C._dyn_roundtrip,
and dyn_codegen.c (graph-break transformed functions and resume functions)
through _C._dyn_test_break, on Python 3.11 and 3.12."""
import asyncio
import collections
import dis
import importlib
import io
import sys
import types

import pytest

from ptc import _C

PY312 = sys.version_info >= (3, 12)

pytestmark = pytest.mark.skipif(
    not getattr(_C, "DYN_SUPPORTED", 1) or not hasattr(_C, "_dyn_roundtrip"),
    reason="bytecode capture not available in this build / Python",
)


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
def all_codes(code):
    """code and every code object nested in its constants."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from all_codes(c)


def norm_lines(code):
    """co_lines() with adjacent ranges of one line merged."""
    out = []
    for s, e, line in code.co_lines():
        if out and out[-1][2] == line and out[-1][1] == s:
            out[-1] = (out[-1][0], e, line)
        else:
            out.append((s, e, line))
    return out


def exc_table(code):
    """code unit -> (handler, depth, lasti) of the exception table."""
    out = {}
    for e in dis._parse_exception_table(code):
        for off in range(e.start, e.end, 2):
            out[off] = (e.target, e.depth, e.lasti)
    return out


def insn_view(code):
    """Decoded instructions without offsets/args that depend on layout."""
    rows = _C._dyn_decode(code)
    out = []
    for name, arg, _off, target, line, handler, depth, lasti in rows:
        out.append((name, arg if target < 0 else None, target, line, handler, depth, lasti))
    return out


def check_roundtrip(code, generated=False):
    """Round trip of `code`; the re-computed stack size must match the
    compiler's (generated code: its size includes a margin, see dyn.h)."""
    new = _C._dyn_roundtrip(code)
    assert isinstance(new, types.CodeType)
    assert insn_view(new) == insn_view(code)
    if not generated:
        assert new.co_stacksize >= code.co_stacksize
        assert new.co_stacksize <= code.co_stacksize + 1
    assert norm_lines(new) == norm_lines(code)
    if new.co_code == code.co_code:
        assert exc_table(new) == exc_table(code)
    dis.dis(new, file=io.StringIO())  # the result disassembles
    return new


def rebuild(fn):
    """fn with its code object (and nested ones) round-tripped."""

    def rt(code):
        consts = tuple(rt(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        return check_roundtrip(code.replace(co_consts=consts))

    g = types.FunctionType(rt(fn.__code__), fn.__globals__, fn.__name__, fn.__defaults__,
                           fn.__closure__)
    g.__kwdefaults__ = fn.__kwdefaults__
    return g


# ----------------------------------------------------------------------
# a corpus of functions
# ----------------------------------------------------------------------
def f_loops(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        j = 0
        while j < i:
            s += j
            j += 1
            if s > 1000:
                break
        else:
            s -= 1
    return s


def f_try(x):
    out = []
    try:
        out.append(10 // x)
    except ZeroDivisionError as e:
        out.append(str(e))
    except (TypeError, ValueError):
        out.append("tv")
    else:
        out.append("else")
    finally:
        out.append("finally")
    try:
        try:
            raise KeyError(x)
        finally:
            out.append("inner")
    except KeyError as k:
        out.append(k.args)
    return out


class _Ctx:
    def __init__(self, log, swallow=False):
        self.log, self.swallow = log, swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *a):
        self.log.append(("exit", a[0].__name__ if a[0] else None))
        return self.swallow


def f_with(x):
    log = []
    with _Ctx(log) as c:
        log.append(c is not None)
    with _Ctx(log, swallow=True):
        if x:
            raise ValueError("boom")
        log.append("no raise")
    try:
        with _Ctx(log):
            1 / 0
    except ZeroDivisionError:
        log.append("zde")
    return log


def f_comprehensions(n):
    a = [i * i for i in range(n) if i % 2]
    b = {i: str(i) for i in range(n)}
    c = {i % 3 for i in range(n)}
    d = list(x + 1 for x in range(n))
    e = [[j for j in range(i)] for i in range(n)]
    return a, b, c, d, e


def f_closure(n):
    k = 3

    def inner(x):
        nonlocal k
        k += 1
        return x * k

    lam = lambda y: y + k  # noqa: E731
    return [inner(i) for i in range(n)], lam(1), k


def f_generator(n):
    def gen(m):
        for i in range(m):
            got = yield i
            if got:
                yield got
        return "done"

    def deleg(m):
        r = yield from gen(m)
        yield r

    g = gen(n)
    out = [next(g), g.send("s"), next(g)]
    return out, list(deleg(n))


def f_async(n):
    async def co(x):
        await asyncio.sleep(0)
        return x * 2

    async def main():
        r = []
        for i in range(n):
            r.append(await co(i))
        async def agen():
            for i in range(2):
                yield i
        async for v in agen():
            r.append(v)
        return r

    return asyncio.run(main())


def f_calls(a, b=2, *args, c, d=4, **kw):
    def g(*p, **q):
        return p, sorted(q.items())

    t = g(a, b, *args, c=c, **kw)
    m = "x".join(str(v) for v in (a, b, c, d))
    s = {"k": 1, **kw}
    return t, m, s, [*args, *range(2)], max(a, b, key=lambda v: -v)


def f_misc(x):
    a, *b, c = range(5)
    d = x if x else -x
    e = not x
    f = x is None or x == 3 and x != 4
    s = f"{x!r:>5} {a}"
    g = (lambda: 1)()
    h = [1, 2, 3][1:2]
    h[0:1] = [9]
    del h[0]
    i = x in (1, 2, 3)
    import math as m

    j = m.floor(2.5)
    k = {"a": 1}.get("a")
    assert x != 12345, "never"
    match x:
        case 1:
            mm = "one"
        case [p, q]:
            mm = p + q
        case {"k": v}:
            mm = v
        case _:
            mm = "other"
    return a, b, c, d, e, f, s, g, h, i, j, k, mm


class _Base:
    def who(self):
        return "base"


class _Derived(_Base):
    def who(self):
        return "derived/" + super().who()


def f_super():
    return _Derived().who()


CORPUS = [
    (f_loops, [(0,), (7,), (40,)]),
    (f_try, [(0,), (2,), ("a",)]),
    (f_with, [(0,), (1,)]),
    (f_comprehensions, [(0,), (6,)]),
    (f_closure, [(3,)]),
    (f_generator, [(3,)]),
    (f_async, [(3,)]),
    (f_calls, [((1,), {"c": 3}), ((1, 2, 5, 6), {"c": 3, "z": 9})]),
    (f_misc, [(0,), (1,), (3,), ([1, 2],), ({"k": 7},)]),
    (f_super, [()]),
]


def _call(fn, args):
    if len(args) == 2 and isinstance(args[0], tuple) and isinstance(args[1], dict):
        pos, kw = args
    else:
        pos, kw = args, {}
    try:
        return ("ok", fn(*pos, **kw))
    except Exception as e:  # compared by type and message
        return ("exc", type(e).__name__, str(e))


@pytest.mark.parametrize("fn,cases", CORPUS, ids=[f.__name__ for f, _ in CORPUS])
def test_roundtrip_behaves_like_original(fn, cases):
    g = rebuild(fn)
    for args in cases:
        assert _call(g, args) == _call(fn, args)


def test_roundtrip_bytes_identical_for_corpus():
    same = total = 0
    for fn, _ in CORPUS:
        for code in all_codes(fn.__code__):
            new = check_roundtrip(code)
            total += 1
            same += new.co_code == code.co_code and exc_table(new) == exc_table(code)
    assert total > 20
    assert same == total


def test_decode_fields():
    rows = _C._dyn_decode(f_loops.__code__)
    names = [r[0] for r in rows]
    assert names[0] == "RESUME"
    assert "FOR_ITER" in names and "JUMP_BACKWARD" in names
    assert "EXTENDED_ARG" not in names and "CACHE" not in names
    for name, arg, off, target, line, handler, depth, lasti in rows:
        assert off >= 0
        if "JUMP" in name or name == "FOR_ITER":
            assert 0 <= target < len(rows)
        else:
            assert target == -1
    # offsets match dis (dis shows byte offsets, we give code units)
    ref = [i.offset // 2 for i in dis.get_instructions(f_loops) if i.opname != "EXTENDED_ARG"]
    assert [r[2] for r in rows] == ref
    # exception handlers
    rows = _C._dyn_decode(f_try.__code__)
    assert any(r[5] >= 0 for r in rows)
    for r in rows:
        if r[5] >= 0:
            assert r[5] < len(rows) and r[6] >= 0 and r[7] in (0, 1)


def test_decode_jump_targets_match_dis():
    for fn, _ in CORPUS:
        for code in all_codes(fn.__code__):
            rows = _C._dyn_decode(code)
            by_off = {2 * r[2]: k for k, r in enumerate(rows)}
            for ins in dis.get_instructions(code):
                if ins.opname == "EXTENDED_ARG" or ins.opcode not in dis.hasjrel:
                    continue
                k = by_off[ins.offset]
                tgt = ins.argval
                # a jump to an instruction with EXTENDED_ARG prefixes lands on the prefix
                while tgt not in by_off:
                    tgt += 2
                got, want = rows[k][3], by_off[tgt]
                # 3.12: our FOR_ITER target is its END_FOR (dis may show the
                # instruction after it, where execution continues)
                ok = got == want or (PY312 and ins.opname == "FOR_ITER" and got + 1 == want
                                     and rows[got][0] == "END_FOR")
                assert ok, (code.co_name, ins, got, want)


def test_roundtrip_module_and_class_bodies():
    src = """
import math
class A:
    x = 1
    def m(self, y):
        return self.x + y
    @property
    def p(self):
        return [self.x * i for i in range(3)]
R = [A().m(2), A().p, math.sqrt(16)]
try:
    import _no_such_module_
except ImportError:
    R.append("noimport")
"""
    code = compile(src, "<mod>", "exec")
    ref, new = {}, {}
    exec(code, ref)

    def rt(c):
        consts = tuple(rt(k) if isinstance(k, types.CodeType) else k for k in c.co_consts)
        return check_roundtrip(c.replace(co_consts=consts))

    exec(rt(code), new)
    assert new["R"] == ref["R"]


def test_roundtrip_stdlib_functions():
    n = 0
    for modname in ["json.decoder", "json.encoder", "textwrap", "dis", "inspect", "collections",
                    "argparse", "string", "functools", "ast", "typing", "pathlib"]:
        mod = importlib.import_module(modname)
        for obj in list(vars(mod).values()):
            cands = [obj]
            if isinstance(obj, type):
                cands = list(vars(obj).values())
            for f in cands:
                if isinstance(f, types.FunctionType) and f.__module__ == mod.__name__:
                    for code in all_codes(f.__code__):
                        check_roundtrip(code)
                        n += 1
    assert n > 300


def test_roundtrip_stdlib_still_works():
    import textwrap

    tw = textwrap.TextWrapper.wrap
    g = rebuild(tw)
    w = textwrap.TextWrapper(width=12)
    text = "the quick brown fox jumps over the lazy dog " * 4
    assert g(w, text) == tw(w, text)


def _big_function_source(n_locals, n_consts, body_repeat):
    lines = ["def big(x):"]
    for i in range(n_locals):
        lines.append(f"    v{i} = x + {i}")
    lines.append("    s = 0")
    lines.append("    for k in range(3):")
    lines.append("        if x > 0:")
    for r in range(body_repeat):
        lines.append(f"            s += v{r % n_locals} * {r % n_consts + 1000} + k")
    lines.append("        else:")
    lines.append("            s -= 1")
    lines.append(f"    return s + v{n_locals - 1}, [{', '.join(str(i + 5000) for i in range(n_consts))}][-1]")
    ns = {}
    exec("\n".join(lines), ns)
    return ns["big"]


def test_roundtrip_extended_arg():
    big = _big_function_source(300, 300, 400)
    names = [r[0] for r in _C._dyn_decode(big.__code__)]
    assert "EXTENDED_ARG" not in names
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(big))
    g = rebuild(big)
    for x in (1, -1, 3):
        assert g(x) == big(x)
    assert g.__code__.co_code == big.__code__.co_code


def test_asm_extended_jump_args():
    # a loop body long enough that the backward jump and the forward
    # conditional need EXTENDED_ARG
    big = _big_function_source(10, 10, 600)
    g = rebuild(big)
    assert g(2) == big(2)
    assert g(-2) == big(-2)


# ----------------------------------------------------------------------
# graph-break code generation
# ----------------------------------------------------------------------
def _g(a, b):
    return a * 10 + b


def _pred(v):
    return v > 2


def call_groups(code):
    """(start, end) of each call's instruction group: [KW_NAMES] [PRECALL] CALL."""
    rows = _C._dyn_decode(code)
    out = []
    for i, r in enumerate(rows):
        if r[0] != "CALL":
            continue
        s = i if PY312 else i - 1
        if rows[s - 1][0] == "KW_NAMES":
            s -= 1
        out.append((s, i))
    return out


def first_index(code, pred, start=0):
    rows = _C._dyn_decode(code)
    for i in range(start, len(rows)):
        if pred(rows[i][0]):
            return i
    raise AssertionError("no such instruction")


def do_break(fn, group, stack, nulls, live):
    """Transformed function of `fn` at `group` called with the hand-made
    state (stack values (None where NULL), then `live` values)."""
    code = fn.__code__
    names = code.co_varnames
    live_idx = tuple(names.index(k) for k in live)
    f = _C._dyn_test_break(code, group[0], group[1], len(stack), live_idx,
                           tuple(int(b) for b in nulls), fn.__globals__)
    assert not isinstance(f, str), f
    dis.dis(f, file=io.StringIO())
    for c in f.__code__.co_consts:
        if isinstance(c, types.FunctionType):
            dis.dis(c, file=io.StringIO())
            check_roundtrip(c.__code__, generated=True)
    return f(tuple(stack) + tuple(live.values()))


def b_simple(x, y):
    a = x + 1
    b = _g(a, y)
    c = b * 2
    return c + a


def test_break_at_call():
    x, y = 3, 5
    a = x + 1
    grp = call_groups(b_simple.__code__)[0]
    got = do_break(b_simple, grp, [None, _g, a, y], [1, 0, 0, 0], {"x": x, "y": y, "a": a})
    assert got == b_simple(3, 5)


def test_break_at_call_after_kw_names():
    # the group starts at the call itself, after KW_NAMES: the names are replayed
    s, e = call_groups(b_kw.__code__)[0]
    got = do_break(b_kw, (s + 1, e), [None, _g, 4, 5], [1, 0, 0, 0], {"x": 3, "y": 5, "a": 4})
    assert got == b_kw(3, 5)


def b_kw(x, y):
    a = x + 1
    b = _g(a, b=y)
    return b - a


def test_break_at_kw_call():
    grp = call_groups(b_kw.__code__)[0]
    rows = _C._dyn_decode(b_kw.__code__)
    assert rows[grp[0]][0] == "KW_NAMES"
    got = do_break(b_kw, grp, [None, _g, 4, 5], [1, 0, 0, 0], {"x": 3, "y": 5, "a": 4})
    assert got == b_kw(3, 5)


class _Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, v):
        return v * self.k


def b_method(obj, x):
    a = x - 1
    r = obj.scale(a)
    return r + a


def test_break_at_method_call():
    obj = _Scaler(7)
    grp = call_groups(b_method.__code__)[0]
    got = do_break(b_method, grp, [_Scaler.scale, obj, 4], [0, 0, 0], {"obj": obj, "x": 5, "a": 4})
    assert got == b_method(obj, 5)


def _h(a, b):
    return (a, b)


def b_nested(x):
    a = x * 2
    return _h(1, _g(a, 2))


def test_break_at_nested_call_keeps_outer_stack():
    grp = call_groups(b_nested.__code__)[0]  # the inner call _g(a, 2)
    stack = [None, _h, 1, None, _g, 6, 2]
    got = do_break(b_nested, grp, stack, [1, 0, 0, 1, 0, 0, 0], {"x": 3, "a": 6})
    assert got == b_nested(3)


def b_loop(n):
    s = 0
    for i in range(n):
        s += _g(i, 1)
    return s


def test_break_in_loop_resumes_loop():
    grp = call_groups(b_loop.__code__)[1]  # range(n) is call 0
    it = iter(range(5))
    i = next(it)
    stack = [it, 0, None, _g, i, 1]
    got = do_break(b_loop, grp, stack, [0, 0, 1, 0, 0, 0], {"n": 5, "s": 0, "i": i})
    assert got == b_loop(5)


def b_branch(x):
    if _pred(x):
        r = x + 1
    else:
        r = x - 1
    return r * 2


@pytest.mark.parametrize("x", [1, 5])
def test_break_at_conditional_jump(x):
    j = first_index(b_branch.__code__, lambda n: n.startswith("POP_JUMP"))
    got = do_break(b_branch, (j, j), [_pred(x)], [0], {"x": x})
    assert got == b_branch(x)


def b_andor(x):
    return _pred(x) and x * 3


@pytest.mark.parametrize("x", [1, 5])
def test_break_at_value_keeping_jump(x):
    code = b_andor.__code__
    call = call_groups(code)[0][1]
    j = first_index(code, lambda n: "JUMP" in n, call + 1)
    got = do_break(b_andor, (call + 1, j), [_pred(x)], [0], {"x": x})
    assert got == b_andor(x)


def b_forit(xs):
    t = 0
    for v in xs:
        t += v
    return t


@pytest.mark.parametrize("items,consumed", [([1, 2, 3], 1), ([4], 1), ([], 0)])
def test_break_at_for_iter(items, consumed):
    j = first_index(b_forit.__code__, lambda n: n == "FOR_ITER")
    it = iter(items)
    t = 0
    for _ in range(consumed):
        t += next(it)
    got = do_break(b_forit, (j, j), [it], [0], {"xs": items, "t": t})
    assert got == sum(items)


def b_ret(x):
    return _g(x, 1)


def test_break_at_return():
    j = first_index(b_ret.__code__, lambda n: n.startswith("RETURN"))
    got = do_break(b_ret, (j, j), [42], [0], {"x": 4})
    assert got == 42


def b_print(x):
    a = x + 1
    print("value", a)
    return a * 3


def test_break_at_print(capsys):
    grp = call_groups(b_print.__code__)[0]
    got = do_break(b_print, grp, [None, print, "value", 5], [1, 0, 0, 0], {"x": 4, "a": 5})
    assert got == 15
    assert capsys.readouterr().out == "value 5\n"


def _raiser(a, b):
    raise ValueError(f"bad {a} {b}")


def b_raise(x):
    y = _raiser(x, 2)
    return y


def test_break_group_raises_same_exception():
    grp = call_groups(b_raise.__code__)[0]
    with pytest.raises(ValueError, match="bad 3 2"):
        do_break(b_raise, grp, [None, _raiser, 3, 2], [1, 0, 0, 0], {"x": 3})


def b_tryafter(x):
    y = _g(x, 1)
    try:
        z = 100 // (y - 11)
    except ZeroDivisionError:
        z = -1
    with _Ctx([]):
        z += 1
    return z


@pytest.mark.parametrize("x", [1, 2])
def test_resume_into_try_and_with(x):
    grp = call_groups(b_tryafter.__code__)[0]
    got = do_break(b_tryafter, grp, [None, _g, x, 1], [1, 0, 0, 0], {"x": x})
    assert got == b_tryafter(x)


def b_comp(n):
    a = _g(n, 0)
    return [v * 2 for v in range(a)], {v: v + 1 for v in range(n)}


def test_resume_before_comprehension():
    grp = call_groups(b_comp.__code__)[0]
    got = do_break(b_comp, grp, [None, _g, 3, 0], [1, 0, 0, 0], {"n": 3})
    assert got == b_comp(3)


def b_dead(x):
    a = x + 1
    b = _g(x, 1)
    return a + b


def test_missing_live_local_raises_unbound_not_crash():
    grp = call_groups(b_dead.__code__)[0]
    with pytest.raises(UnboundLocalError):
        do_break(b_dead, grp, [None, _g, 2, 1], [1, 0, 0, 0], {"x": 2})
    # again once the generated code is warm (specialised by the interpreter)
    code = b_dead.__code__
    f = _C._dyn_test_break(code, grp[0], grp[1], 4, (0,), (1, 0, 0, 0), globals())
    for _ in range(50):
        with pytest.raises(UnboundLocalError):
            f((None, _g, 2, 1, 2))
    f_ok = _C._dyn_test_break(code, grp[0], grp[1], 4, (0, 1), (1, 0, 0, 0), globals())
    for _ in range(50):
        assert f_ok((None, _g, 2, 1, 2, 3)) == b_dead(2)


def test_generated_code_stays_correct_when_warm():
    """Generated code called many times (the interpreter specialises it
    in place: caches must be laid out right)."""
    grp = call_groups(b_loop.__code__)[1]
    code = b_loop.__code__
    f = _C._dyn_test_break(code, grp[0], grp[1], 6, (0, 1, 2), (0, 0, 1, 0, 0, 0), globals())
    for n in list(range(1, 30)) * 3:
        it = iter(range(n))
        i = next(it)
        assert f((it, 0, None, _g, i, 1, n, 0, i)) == b_loop(n)


def b_cached(x):
    y = _g(x, 2)
    return y


def test_resume_code_is_cached():
    code = b_cached.__code__
    grp = call_groups(code)[0]
    fs = [_C._dyn_test_break(code, grp[0], grp[1], 4, (0,), (1, 0, 0, 0), globals())
          for _ in range(2)]
    r = [[c for c in f.__code__.co_consts if isinstance(c, types.FunctionType)][0] for f in fs]
    assert r[0].__code__ is r[1].__code__
    assert r[0].__name__.startswith("__resume_at_")
    other = _C._dyn_test_break(code, grp[0], grp[1], 4, (), (1, 0, 0, 0), globals())
    r2 = [c for c in other.__code__.co_consts if isinstance(c, types.FunctionType)][0]
    assert r2.__code__ is not r[0].__code__  # a different live set


def test_break_with_extended_arg():
    big = _big_function_source(300, 300, 50)
    code = big.__code__
    grp = call_groups(code)[0]  # range(3)
    x = 2
    live = {f"v{i}": x + i for i in range(300)}
    live["x"] = x
    live["s"] = 0
    got = do_break(big, grp, [None, range, 3], [1, 0, 0], live)
    assert got == big(x)


def r_try(x):
    try:
        y = _g(x, 1)
    except ValueError:
        y = 0
    return y


def b_intry(x):
    y = 0
    try:
        y = _g(x, 1)
        y += 1
    except TypeError:
        y = -5
    return y


@pytest.mark.parametrize("x", [2, "s"])
def test_break_inside_try(x):
    grp = call_groups(b_intry.__code__)[0]
    got = do_break(b_intry, grp, [None, _g, x, 1], [1, 0, 0, 0], {"x": x, "y": 0})
    assert got == b_intry(x)


def test_break_inside_try_raising_uncaught():
    grp = call_groups(r_try.__code__)[0]
    with pytest.raises(TypeError):  # ValueError handler does not match
        do_break(r_try, grp, [None, _g, "s", None], [1, 0, 0, 0], {"x": "s"})
    assert do_break(r_try, grp, [None, _g, 3, 1], [1, 0, 0, 0], {"x": 3}) == 31


def b_inwith(x, log):
    with _Ctx(log):
        y = _g(x, 1)
        log.append(y)
    return y


@pytest.mark.parametrize("x", [2, "s"])
def test_break_inside_with(x):
    ref_log = []
    try:
        ref = ("ok", b_inwith(x, ref_log))
    except TypeError as e:
        ref = ("exc", str(e))
    log = []
    ctx = _Ctx(log)
    ctx.__enter__()
    grp = call_groups(b_inwith.__code__)[1]  # _Ctx(log) is call 0
    try:
        got = ("ok", do_break(b_inwith, grp, [ctx.__exit__, None, _g, x, 1], [0, 1, 0, 0, 0],
                              {"x": x, "log": log}))
    except TypeError as e:
        got = ("exc", str(e))
    assert got == ref
    assert log == ref_log


def r_closure(x):
    def inner():
        return x

    y = _g(x, 1)
    return y, inner


def r_gen(x):
    y = _g(x, 1)
    yield y


def r_method_lookup(obj):
    return obj.scale


def test_refusals():
    for fn, reason in [(r_closure, "cell"), (r_gen, "generator")]:
        code = fn.__code__
        grp = call_groups(code)[-1]
        got = _C._dyn_test_break(code, grp[0], grp[1], 4, (), (1, 0, 0, 0), globals())
        assert isinstance(got, str) and reason in got, (fn.__name__, got)
    # a method lookup as the last instruction of a group is fine (below)
    code = r_method_lookup.__code__
    j = first_index(code, lambda n: n in ("LOAD_METHOD", "LOAD_ATTR"))
    got = _C._dyn_test_break(code, j, j, 1, (0,), None, globals())
    assert callable(got)
    assert got((_Scaler(3), _Scaler(3)))(5) == 15


def b_methlookup(obj, x):
    return obj.scale(x) + 1


@pytest.mark.parametrize("plain_attr", [False, True])
def test_break_at_method_lookup(plain_attr):
    obj = _Scaler(4)
    if plain_attr:  # an instance attribute: the lookup pushes (NULL, attr)
        obj.scale = lambda v: v * 100
    code = b_methlookup.__code__
    j = first_index(code, lambda n: n in ("LOAD_METHOD", "LOAD_ATTR"))
    got = do_break(b_methlookup, (j, j), [obj], [0], {"obj": obj, "x": 3})
    assert got == b_methlookup(obj, 3)


def test_bad_arguments_raise():
    code = b_simple.__code__
    with pytest.raises(ValueError):
        _C._dyn_test_break(code, 5, 2, 0, (), None, globals())
    with pytest.raises(ValueError):
        _C._dyn_test_break(code, 0, 0, 0, (99,), None, globals())


def test_resume_function_is_plain_python():
    """The resume function decodes, disassembles and shows its name."""
    code = b_simple.__code__
    grp = call_groups(code)[0]
    f = _C._dyn_test_break(code, grp[0], grp[1], 4, (0, 1, 2), (1, 0, 0, 0), globals())
    res = [c for c in f.__code__.co_consts if isinstance(c, types.FunctionType)][0]
    rc = res.__code__
    assert rc.co_argcount == 1 + 3
    assert rc.co_varnames[:4] == ("__stack0", "x", "y", "a")
    assert rc.co_filename == code.co_filename
    rows = _C._dyn_decode(rc)
    assert rows[0][0] == "RESUME"
    assert res(21, 1, 2, 2) == 21 * 2 + 2
    assert f.__code__.co_varnames[0] == "__ptc_state"


def _make_closure():
    k = 5
    h = _g

    def inner(x):
        a = x + k
        b = h(a, 1)
        return b * k

    return inner


def _make_counter():
    count = 0

    def inc(x):
        nonlocal count
        y = _g(x, 0)
        count += y
        return count

    return inc


def do_break_closure(fn, group, stack, nulls, live):
    code = fn.__code__
    live_idx = tuple(code.co_varnames.index(k) for k in live)
    f = _C._dyn_test_break(code, group[0], group[1], len(stack), live_idx,
                           tuple(int(b) for b in nulls), fn.__globals__, fn.__closure__)
    assert not isinstance(f, str), f
    for c in f.__code__.co_consts:
        if isinstance(c, types.FunctionType):
            assert c.__closure__ is not None
            check_roundtrip(c.__code__, generated=True)
    return f(tuple(stack) + tuple(live.values()))


def test_break_with_free_variables():
    inner = _make_closure()
    grp = call_groups(inner.__code__)[0]
    got = do_break_closure(inner, grp, [None, _g, 8, 1], [1, 0, 0, 0], {"x": 3, "a": 8})
    assert got == inner(3)
    # without the closure the break is refused
    code = inner.__code__
    r = _C._dyn_test_break(code, grp[0], grp[1], 4, (), (1, 0, 0, 0), globals())
    assert isinstance(r, str) and "free" in r


def test_break_with_nonlocal_write_shares_the_cell():
    inc = _make_counter()
    inc(1)  # count = 10
    grp = call_groups(inc.__code__)[0]
    got = do_break_closure(inc, grp, [None, _g, 2, 0], [1, 0, 0, 0], {"x": 2})
    assert got == 30
    assert inc.__closure__[0].cell_contents == 30
    assert inc(1) == 40
