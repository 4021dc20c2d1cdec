"""Row scores four rows at a time in vector registers, in the summation order of
:func:`ltr_cli.kernels.core.row_scores_into` (reference: that function's scalar loop, and
:func:`ltr_cli.measures.metrics.row_scores`).

A row's score is four partial sums, column j going to sum j mod 4, each product rounded
(no fused multiply-add), combined as ``(a0 + a1) + (a2 + a3)``. The four partial sums of a
row are the four lanes of one vector: a vector multiply and add of four columns does, lane
by lane, exactly the scalar loop's arithmetic, so the bits are the same. The scalar loop
is bound by its additions' latency and issue; four rows' independent vectors fill the
pipeline instead. numba's vectoriser does not find this on its own (it would need to
reassociate), so the loop is written in LLVM IR here.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

ROWS = 4  # rows per call


@intrinsic
def rows_dot4(typingctx: Any, X: Any, i: Any, w: Any, nrows: Any) -> Any:
    """``(X[i] @ w, ..., X[i + 3] @ w)`` in the partial-sum order above, for C-contiguous
    ``X`` (float64 or float32, widened to float64) and ``w`` (float64); rows from ``nrows``
    (1..4) on are not read (their entries are the first row's score)."""
    if not (isinstance(X, types.Array) and X.ndim == 2 and X.layout == "C" and X.dtype in (types.float64, types.float32)
            and isinstance(w, types.Array) and w.ndim == 1 and w.layout == "C" and w.dtype == types.float64):
        return None
    sig = types.UniTuple(types.float64, ROWS)(X, i, w, nrows)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        Xt, it, wt, nt = signature.args
        i64 = ir.IntType(64)
        dbl = ir.DoubleType()
        Xa = context.make_array(Xt)(context, builder, args[0])
        wa = context.make_array(wt)(context, builder, args[2])
        first = context.cast(builder, args[1], it, types.int64)
        nrows = context.cast(builder, args[3], nt, types.int64)
        d = builder.extract_value(Xa.shape, 1)
        xel = context.get_data_type(Xt.dtype)
        widen = Xt.dtype != types.float64
        vd = ir.VectorType(dbl, 4)
        vx = ir.VectorType(xel, 4)
        rows = []
        for r in range(ROWS):  # a row past nrows reads the first row instead (its result is dropped)
            row = builder.select(builder.icmp_signed("<", ir.Constant(i64, r), nrows),
                                 builder.add(first, ir.Constant(i64, r)), first)
            rows.append(builder.gep(Xa.data, [builder.mul(row, d)]))
        quads = builder.udiv(d, ir.Constant(i64, 4))
        accs = [cgutils.alloca_once_value(builder, ir.Constant(vd, [0.0] * 4)) for _ in range(ROWS)]
        with cgutils.for_range(builder, quads) as loop:
            j = builder.mul(loop.index, ir.Constant(i64, 4))
            wv = builder.load(builder.bitcast(builder.gep(wa.data, [j]), vd.as_pointer()), align=8)
            for r in range(ROWS):
                xv = builder.load(builder.bitcast(builder.gep(rows[r], [j]), vx.as_pointer()), align=4 if widen else 8)
                if widen:
                    xv = builder.fpext(xv, vd)
                builder.store(builder.fadd(builder.load(accs[r]), builder.fmul(xv, wv)), accs[r])
        base = builder.mul(quads, ir.Constant(i64, 4))
        left = builder.sub(d, base)  # 0..3 columns after the last full group of four
        out = []
        for r in range(ROWS):
            acc = builder.load(accs[r])
            lanes = []
            for lane in range(4):
                a = builder.extract_element(acc, ir.Constant(ir.IntType(32), lane))
                if lane < 3:  # column base + lane, when it exists, goes to this lane
                    has = builder.icmp_signed("<", ir.Constant(i64, lane), left)
                    col = builder.select(has, builder.add(base, ir.Constant(i64, lane)), ir.Constant(i64, 0))
                    x = builder.load(builder.gep(rows[r], [col]))
                    if widen:
                        x = builder.fpext(x, dbl)
                    term = builder.fadd(a, builder.fmul(x, builder.load(builder.gep(wa.data, [col]))))
                    a = builder.select(has, term, a)
                lanes.append(a)
            out.append(builder.fadd(builder.fadd(lanes[0], lanes[1]), builder.fadd(lanes[2], lanes[3])))
        return context.make_tuple(builder, signature.return_type, out)

    return sig, codegen
