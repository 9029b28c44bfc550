"""The driver of a kernel's LLVM IR (``llvm_ir``): ``@run``, which walks the points block by
block, points the chunk functions at where each input's points lie, calls them in turn and
copies the outputs out."""

from __future__ import annotations

#: Points per scratch row, a multiple of every vector width: a block's live columns stay in cache.
ROW = 256


def scratch(rows: int, n_inputs: int, row: int = ROW, n_outputs: int = 0) -> int:
    """Doubles of a runner's scratch: its rows of ``ROW`` points, then the inputs' and the
    outputs' addresses for the block in hand (held here, not on the stack, however many)."""
    return rows * row + n_inputs + n_outputs


def driver(n_chunks: int, n_inputs: int, n_outputs: int, width: int, rows: int, row: int = ROW) -> str:
    """``@run(ins, numbers, outs, rows, n, S, K, H)`` over a scratch ``S`` of ``rows`` rows
    (``scratch``): the chunks run on each block of ``row`` (``ROW``) points, reading input k
    (``ins[k]``, its points ``ins[n_inputs + k]`` doubles apart) where it lies — its array at
    the block; a number (``numbers[k]`` 1) from scratch row k, written over the row once per
    call, or (2: code that reads it as one double) from where it is. The chunks write output j
    where the driver points them (after the inputs' addresses): into ``outs[j]`` itself for a
    block of whole vectors, else its row ``rows[j]``, copied into ``outs[j]`` (its points
    ``outs[n_outputs + j]`` doubles apart) after the block, as an output that is an input is
    (where it lies; none when -1). Points that are not next to each other — a column of a
    (points × n) array, as JAX lays a batch out — go through the rows of the block both ways:
    a block's rows stay in cache, so the transpose costs no pass over memory of its own. The
    copies move whole vectors where they can, and the other points one at a time (the IR is
    not optimised before code generation, so nothing would vectorise a loop of doubles)."""
    vector = f"<{width} x double>"
    after_base = "aim" if n_outputs else "compute"
    calls = [f"  call void @c{k}(ptr %S, ptr %K, ptr %H, i64 %vectors, ptr %B)" for k in range(n_chunks)]
    return "\n".join([
        "define void @run(ptr %ins, ptr %numbers, ptr %outs, ptr %rows, i64 %n, ptr noalias %S, ptr %K, ptr %H) {",
        "entry:", f"  %B = getelementptr inbounds double, ptr %S, i64 {rows * row}",
        "  %any = icmp sgt i64 %n, 0", f"  br i1 %any, label %{'fill.next' if n_inputs else 'block'}, label %end",
        # the numbers, once: each written over its scratch row
        "fill.next:", "  %k = phi i64 [0, %entry], [%k.next, %fill.end]",
        "  %srcp = getelementptr inbounds ptr, ptr %ins, i64 %k", "  %src = load ptr, ptr %srcp, align 8",
        "  %flagp = getelementptr inbounds i8, ptr %numbers, i64 %k", "  %flag = load i8, ptr %flagp, align 1",
        "  %number = icmp eq i8 %flag, 1", "  br i1 %number, label %fill, label %fill.end",
        "fill:", f"  %in.row = mul nuw nsw i64 %k, {row}", "  %to = getelementptr inbounds double, ptr %S, i64 %in.row",
        "  %x1 = load double, ptr %src, align 8",
        f"  %x.first = insertelement {vector} poison, double %x1, i64 0",
        f"  %x.all = shufflevector {vector} %x.first, {vector} poison, <{width} x i32> zeroinitializer",
        "  br label %fill.loop",
        "fill.loop:", "  %f = phi i64 [0, %fill], [%f.next, %fill.loop]",
        f"  %fp = getelementptr inbounds {vector}, ptr %to, i64 %f", f"  store {vector} %x.all, ptr %fp, align 8",
        "  %f.next = add nuw nsw i64 %f, 1", f"  %f.more = icmp slt i64 %f.next, {row // width}",
        "  br i1 %f.more, label %fill.loop, label %fill.end",
        "fill.end:", "  %k.next = add nuw nsw i64 %k, 1", f"  %k.more = icmp slt i64 %k.next, {n_inputs}",
        "  br i1 %k.more, label %fill.next, label %block",
        "block:", f"  %a = phi i64 [0, %{'fill.end' if n_inputs else 'entry'}], [%a.next, %block.end]",
        "  %left = sub i64 %n, %a", f"  %short = icmp slt i64 %left, {row}",
        f"  %m = select i1 %short, i64 %left, i64 {row}", f"  %whole = udiv i64 %m, {width}",
        f"  %cut = mul nuw nsw i64 %whole, {width}", "  %exact = icmp eq i64 %cut, %m",
        f"  br label %{'base' if n_inputs else after_base}",
        # where each input's points of the block lie: in its array, or (a number; the points of
        # the last block where they end inside a vector, which must not be read past) its row
        "base:", "  %b = phi i64 [0, %block], [%b.next, %base.set]",
        "  %bsrcp = getelementptr inbounds ptr, ptr %ins, i64 %b", "  %bsrc = load ptr, ptr %bsrcp, align 8",
        f"  %bstride.at = add nuw nsw i64 %b, {n_inputs}", "  %bstridep = getelementptr inbounds i64, ptr %ins, i64 %bstride.at",
        "  %bstride = load i64, ptr %bstridep, align 8",
        "  %bflagp = getelementptr inbounds i8, ptr %numbers, i64 %b", "  %bflag = load i8, ptr %bflagp, align 1",
        "  %bnumber = icmp ne i8 %bflag, 0", f"  %brow = mul nuw nsw i64 %b, {row}",
        "  %bfilled = getelementptr inbounds double, ptr %S, i64 %brow",
        "  %bplace = icmp eq i8 %bflag, 2", "  %bnumber.at = select i1 %bplace, ptr %bsrc, ptr %bfilled",
        "  %bskip = mul nsw i64 %a, %bstride", "  %bat = getelementptr inbounds double, ptr %bsrc, i64 %bskip",
        "  br i1 %bnumber, label %base.set, label %base.array",
        "base.array:", "  %bcontiguous = icmp eq i64 %bstride, 1", "  %bdirect = and i1 %exact, %bcontiguous",
        "  br i1 %bdirect, label %base.set, label %base.gathers",
        # a block's whole vectors of points gathered (its points a stride apart), the rest one by one
        "base.gathers:", "  %gany = icmp sgt i64 %whole, 0", *_splat("%gstrides", "%bstride", width),
        "  br i1 %gany, label %base.gather, label %base.rest",
        "base.gather:", "  %g = phi i64 [0, %base.gathers], [%g.next, %base.gather]",
        *_lanes("%g", "%gstrides", width), f"  %g.ptrs = getelementptr double, ptr %bat, <{width} x i64> %g.apart",
        f"  %g.v = call {vector} @{gather(width)}(<{width} x ptr> %g.ptrs, i32 8, {_all(width)}, {vector} poison)",
        f"  %g.to = getelementptr inbounds {vector}, ptr %bfilled, i64 %g", f"  store {vector} %g.v, ptr %g.to, align 8",
        "  %g.next = add nuw nsw i64 %g, 1", "  %g.more = icmp slt i64 %g.next, %whole",
        "  br i1 %g.more, label %base.gather, label %base.rest",
        "base.rest:", "  %prest = icmp slt i64 %cut, %m", "  br i1 %prest, label %base.copy, label %base.set",
        "base.copy:", "  %p = phi i64 [%cut, %base.rest], [%p.next, %base.copy]",
        "  %xat = mul nsw i64 %p, %bstride", "  %xp = getelementptr inbounds double, ptr %bat, i64 %xat",
        "  %x = load double, ptr %xp, align 8",
        "  %yp = getelementptr inbounds double, ptr %bfilled, i64 %p", "  store double %x, ptr %yp, align 8",
        "  %p.next = add nuw nsw i64 %p, 1", "  %p.more = icmp slt i64 %p.next, %m",
        "  br i1 %p.more, label %base.copy, label %base.set",
        "base.set:",
        "  %bptr = phi ptr [%bnumber.at, %base], [%bat, %base.array], [%bfilled, %base.copy], [%bfilled, %base.rest]",
        "  %bdst = getelementptr inbounds ptr, ptr %B, i64 %b", "  store ptr %bptr, ptr %bdst, align 8",
        "  %b.next = add nuw nsw i64 %b, 1", f"  %b.more = icmp slt i64 %b.next, {n_inputs}",
        f"  br i1 %b.more, label %base, label %{after_base}",
        # where each output of the block goes: its array, or (a last block that ends inside a
        # vector, which must not be written past) its row, copied out below
        "aim:", f"  %o = phi i64 [0, %{'base.set' if n_inputs else 'block'}], [%o.next, %aim]",
        "  %orowp = getelementptr inbounds i64, ptr %rows, i64 %o", "  %orow = load i64, ptr %orowp, align 8",
        "  %odstp = getelementptr inbounds ptr, ptr %outs, i64 %o", "  %odst = load ptr, ptr %odstp, align 8",
        f"  %ostride.at = add nuw nsw i64 %o, {n_outputs}", "  %ostridep = getelementptr inbounds i64, ptr %outs, i64 %ostride.at",
        "  %ostride = load i64, ptr %ostridep, align 8", "  %oskip = mul nsw i64 %a, %ostride",
        "  %odst.a = getelementptr inbounds double, ptr %odst, i64 %oskip", f"  %oscratch = mul nsw i64 %orow, {row}",
        "  %orow.at = getelementptr inbounds double, ptr %S, i64 %oscratch",
        "  %ocontiguous = icmp eq i64 %ostride, 1", "  %odirect = and i1 %exact, %ocontiguous",
        "  %oaim = select i1 %odirect, ptr %odst.a, ptr %orow.at",
        f"  %oslot = getelementptr inbounds ptr, ptr %B, i64 {n_inputs}", "  %oslot.j = getelementptr inbounds ptr, ptr %oslot, i64 %o",
        "  store ptr %oaim, ptr %oslot.j, align 8",
        "  %o.next = add nuw nsw i64 %o, 1", f"  %o.more = icmp slt i64 %o.next, {n_outputs}",
        "  br i1 %o.more, label %aim, label %compute",
        "compute:", f"  %m.up = add nuw nsw i64 %m, {width - 1}", f"  %vectors = udiv i64 %m.up, {width}",
        *calls, "  br label %out",
        "out:", "  %j = phi i64 [0, %compute], [%j.next, %out.end]",
        "  %rowp = getelementptr inbounds i64, ptr %rows, i64 %j", "  %row = load i64, ptr %rowp, align 8",
        f"  %jstride.at = add nuw nsw i64 %j, {n_outputs}", "  %jstridep = getelementptr inbounds i64, ptr %outs, i64 %jstride.at",
        "  %jstride = load i64, ptr %jstridep, align 8", "  %jcontiguous = icmp eq i64 %jstride, 1",
        "  %none = icmp slt i64 %row, 0", f"  %written = icmp sge i64 %row, {n_inputs}",
        "  %direct = and i1 %exact, %jcontiguous", "  %there = and i1 %written, %direct", "  %skip = or i1 %none, %there",
        "  br i1 %skip, label %out.end, label %out.start",
        "out.start:", "  %dstp = getelementptr inbounds ptr, ptr %outs, i64 %j", "  %dst = load ptr, ptr %dstp, align 8",
        "  %jskip = mul nsw i64 %a, %jstride", "  %dst.a = getelementptr inbounds double, ptr %dst, i64 %jskip",
        f"  %out.row = mul nuw nsw i64 %row, {row}",
        "  %scratch.row = getelementptr inbounds double, ptr %S, i64 %out.row",
        f"  %is.input = icmp slt i64 %row, {n_inputs}", "  %inputp = getelementptr inbounds ptr, ptr %B, i64 %row",
        "  br i1 %is.input, label %out.input, label %out.ready",
        "out.input:", "  %input.at = load ptr, ptr %inputp, align 8", "  br label %out.ready",
        "out.ready:", "  %from.row = phi ptr [%scratch.row, %out.start], [%input.at, %out.input]",
        "  %out.any = icmp sgt i64 %whole, 0", "  br i1 %out.any, label %out.whole, label %out.rest",
        "out.whole:", *_splat("%sstrides", "%jstride", width),
        "  br i1 %jcontiguous, label %out.vectors, label %out.scatter",
        # whole vectors scattered to points a stride apart, the rest one by one
        "out.scatter:", "  %s = phi i64 [0, %out.whole], [%s.next, %out.scatter]",
        f"  %sq = getelementptr inbounds {vector}, ptr %from.row, i64 %s", f"  %sv = load {vector}, ptr %sq, align 8",
        *_lanes("%s", "%sstrides", width), f"  %s.ptrs = getelementptr double, ptr %dst.a, <{width} x i64> %s.apart",
        f"  call void @{scatter(width)}({vector} %sv, <{width} x ptr> %s.ptrs, i32 8, {_all(width)})",
        "  %s.next = add nuw nsw i64 %s, 1", "  %s.more = icmp slt i64 %s.next, %whole",
        "  br i1 %s.more, label %out.scatter, label %out.rest",
        "out.vectors:", "  %w = phi i64 [0, %out.whole], [%w.next, %out.vectors]",
        f"  %wq = getelementptr inbounds {vector}, ptr %from.row, i64 %w", f"  %zv = load {vector}, ptr %wq, align 8",
        f"  %wp = getelementptr inbounds {vector}, ptr %dst.a, i64 %w", f"  store {vector} %zv, ptr %wp, align 8",
        "  %w.next = add nuw nsw i64 %w, 1", "  %w.more = icmp slt i64 %w.next, %whole",
        "  br i1 %w.more, label %out.vectors, label %out.rest",
        "out.rest:", "  %out.tail = icmp slt i64 %cut, %m", "  br i1 %out.tail, label %out.copy, label %out.end",
        "out.copy:", "  %q = phi i64 [%cut, %out.rest], [%q.next, %out.copy]",
        "  %zp = getelementptr inbounds double, ptr %from.row, i64 %q", "  %z = load double, ptr %zp, align 8",
        "  %qat = mul nsw i64 %q, %jstride", "  %qp = getelementptr inbounds double, ptr %dst.a, i64 %qat",
        "  store double %z, ptr %qp, align 8",
        "  %q.next = add nuw nsw i64 %q, 1", "  %q.more = icmp slt i64 %q.next, %m",
        "  br i1 %q.more, label %out.copy, label %out.end",
        "out.end:", "  %j.next = add nuw nsw i64 %j, 1", f"  %j.more = icmp slt i64 %j.next, {n_outputs}",
        "  br i1 %j.more, label %out, label %block.end",
        "block.end:", f"  %a.next = add nuw nsw i64 %a, {row}", "  %a.more = icmp slt i64 %a.next, %n",
        "  br i1 %a.more, label %block, label %end",
        "end:", "  ret void", "}", ""])


def gather(width: int) -> str:
    """LLVM's gather of ``width`` doubles (declared by ``declarations``)."""
    return f"llvm.masked.gather.v{width}f64.v{width}p0"


def scatter(width: int) -> str:
    return f"llvm.masked.scatter.v{width}f64.v{width}p0"


def declarations(width: int) -> list[str]:
    """What the driver calls: the gather and scatter of a vector of points a stride apart."""
    return [f"declare <{width} x double> @{gather(width)}(<{width} x ptr>, i32 immarg, <{width} x i1>, <{width} x double>)",
            f"declare void @{scatter(width)}(<{width} x double>, <{width} x ptr>, i32 immarg, <{width} x i1>)"]


def _splat(name: str, scalar: str, width: int) -> list[str]:
    """``name``: the i64 ``scalar`` in every lane."""
    return [f"  {name}.first = insertelement <{width} x i64> poison, i64 {scalar}, i64 0",
            f"  {name} = shufflevector <{width} x i64> {name}.first, <{width} x i64> poison, <{width} x i32> zeroinitializer"]


def _lanes(k: str, strides: str, width: int) -> list[str]:
    """``{k}.apart``: the offsets of vector ``k``'s points, ``strides`` doubles apart."""
    lanes = "<" + ", ".join(f"i64 {lane}" for lane in range(width)) + ">"
    return [f"  {k}.at = mul nuw nsw i64 {k}, {width}", *_splat(f"{k}.from", f"{k}.at", width),
            f"  {k}.points = add <{width} x i64> {k}.from, {lanes}", f"  {k}.apart = mul <{width} x i64> {k}.points, {strides}"]


def _all(width: int) -> str:
    return f"<{width} x i1> <" + ", ".join(["i1 true"] * width) + ">"


def point_driver(n_chunks: int) -> str:
    """``@run`` for one point, with the arguments of ``driver`` (only ``ins``, ``S``, ``K`` and
    ``H`` read): the chunks run once on one vector, ``ins`` their table of addresses — each
    input's number, then each output's slot of a vector — so nothing is copied in or out."""
    calls = [f"  call void @c{k}(ptr %S, ptr %K, ptr %H, i64 1, ptr %ins)" for k in range(n_chunks)]
    return "\n".join([
        "define void @run(ptr %ins, ptr %numbers, ptr %outs, ptr %rows, i64 %n, ptr noalias %S, ptr %K, ptr %H) {",
        "entry:", *calls, "  ret void", "}", ""])


__all__ = ["ROW", "declarations", "driver", "point_driver", "scratch"]
