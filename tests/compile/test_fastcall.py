"""Native code as a Python builtin (``compile/fastcall.py``): a ``METH_FASTCALL`` function of
LLVM IR called as any builtin, with its arguments as given and its reference counts kept; its
``self`` holding the addresses its checks read; machine code shared by identical IR while a
builtin of it lives; IR that LLVM refuses an error, no builtin."""

import gc
import sys

import numpy as np
import pytest

from subgraph_ad.compile import fastcall

#: args[nargs - 1], a new reference: the last argument back.
LAST = "\n".join([
    "define ptr @last(ptr %self, ptr %args, i64 %nargs) {",
    "  %k = sub i64 %nargs, 1",
    "  %p = getelementptr inbounds ptr, ptr %args, i64 %k",
    "  %o = load ptr, ptr %p, align 8",
    *fastcall.new_reference("%o", "o"),
    "  ret ptr %o",
    "}", ""])


def test_a_builtin_of_ir_returns_what_it_reads_and_keeps_reference_counts():
    last, code = fastcall.builtin(LAST, "last")
    assert type(last).__name__ == "builtin_function_or_method" and last.__name__ == "last"
    assert [int(w) for w in last.__self__[:4]] == fastcall.known()
    token, other = object(), np.arange(3.0)
    counts = sys.getrefcount(token), sys.getrefcount(other)
    for _ in range(1000):
        assert last(other, token) is token
        assert last(token, other) is other
    assert (sys.getrefcount(token), sys.getrefcount(other)) == counts
    assert last(1, 2, "three") == "three"


def test_builtins_of_the_same_ir_share_machine_code_while_one_lives():
    first, code = fastcall.builtin(LAST, "last")
    second, again = fastcall.builtin(LAST, "last")
    assert again is code and first is not second
    assert second(5, 6) == 6
    del first, second, code, again
    gc.collect()
    third, code = fastcall.builtin(LAST, "last")  # compiled again, or loaded from the cache
    assert third(7, 8) == 8


def test_ir_that_llvm_refuses_is_an_error_and_no_builtin():
    with pytest.raises(RuntimeError):
        fastcall.builtin("define ptr @last(ptr %self) { ret i32 0 }", "last")
