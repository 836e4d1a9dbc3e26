#!/usr/bin/env python3
# Host-side, lane-level emulation of kernels/mla_decode_fwd.cuh (no GPU needed): the index and
# fragment formulas of mla_load_k_tile, mla_warp_qk (8 and 16 keys a warp; warp_qk for 16),
# mla_warp_pv, the P tile, the online softmax with the row maxima exchanged through shared
# memory, the epilogue (O staging swizzle, partial layout) and decode_reduce_kernel<512>, with
# ldmatrix (.trans) and mma.m16n8k16 modelled from the PTX fragment layouts, checked against a
# direct softmax in float64. The formulas are transcribed from the .cuh by hand: a change there
# needs the same change here. Written 2026-12-07 before the kernel first ran on a GPU.
# Usage: python3 cuda_validate/scripts/mla_decode_emulate.py  (pure Python, ~10 s)
import math
import random
random.seed(1)
D, DV = 576, 512
NAN = float('nan')

def swz(row, chunk, kd=D): return row * kd + ((chunk ^ (row & 7)) << 3)
def ldsm_lane_xor(c, lane): return (c ^ (lane & 7)) << 4
def uni(rows, cols, lo=-1, hi=1): return [[round(random.uniform(lo, hi), 3) for _ in range(cols)] for _ in range(rows)]

class Smem:
    def __init__(self, nbytes): self.h = [NAN] * (nbytes // 2)
    def row8(self, a):
        assert a % 16 == 0, a
        return self.h[a // 2:a // 2 + 8]
    def put(self, elem, vals):
        for e, v in enumerate(vals): self.h[elem + e] = v

def ldsm(sm, addrs, trans=False):
    mats = [[sm.row8(addrs[8 * i + r]) for r in range(8)] for i in range(4)]
    regs = []
    for t in range(32):
        rr = []
        for M in mats:
            if trans: rr.append((M[2 * (t % 4)][t // 4], M[2 * (t % 4) + 1][t // 4]))
            else: rr.append((M[t // 4][2 * (t % 4)], M[t // 4][2 * (t % 4) + 1]))
        regs.append(rr)
    return regs

def mma(C, A, B0, B1):
    Am = [[0.0] * 16 for _ in range(16)]; Bm = [[0.0] * 8 for _ in range(16)]
    for t in range(32):
        g, q = t // 4, t % 4
        for e in range(2):
            Am[g][2*q+e] = A[t][0][e]; Am[g+8][2*q+e] = A[t][1][e]
            Am[g][2*q+8+e] = A[t][2][e]; Am[g+8][2*q+8+e] = A[t][3][e]
            Bm[2*q+e][g] = B0[t][e]; Bm[2*q+8+e][g] = B1[t][e]
    for t in range(32):
        g, q = t // 4, t % 4
        for e in range(2):
            C[t][e] += sum(Am[g][k] * Bm[k][2*q+e] for k in range(16))
            C[t][2+e] += sum(Am[g+8][k] * Bm[k][2*q+e] for k in range(16))

def maxdiff(A, B): return max(abs(a - b) for ra, rb in zip(A, B) for a, b in zip(ra, rb))

def run_tile(BKV, paged, page_tokens=64, kv0=0, seqkv=300):
    WARPS = 4; KW = BKV // WARPS; CW = DV // WARPS; PPITCH = BKV + 8
    K = uni(seqkv, D); Q = uni(16, D)
    kv_end = min(seqkv, kv0 + BKV)
    npages = (seqkv + page_tokens - 1) // page_tokens
    table = list(range(npages)); random.shuffle(table)
    pool = [[NAN] * D for _ in range(npages * page_tokens)]
    for tk in range(seqkv): pool[table[tk // page_tokens] * page_tokens + tk % page_tokens] = K[tk]
    first_page = kv0 // page_tokens
    s_table = table[first_page:]
    qb = 16 * D * 2; kb = BKV * D * 2
    sm = Smem(qb + kb + 16 * PPITCH * 2)
    sQ, sK, sP = 0, qb, qb + kb
    for row in range(16):
        for ch in range(D // 8): sm.put(sQ // 2 + swz(row, ch), Q[row][ch*8:ch*8+8])
    written = set()
    for tid in range(128):
        sub = tid % 8; r16 = tid // 8
        s_base = sK + 2 * (r16 * D + ((sub ^ (r16 % 8)) << 3))
        for i in range(BKV // 16):
            t = kv0 + i * 16 + r16
            valid = t < kv_end
            tv = t if valid else kv0
            if paged:
                page = s_table[tv // page_tokens - first_page]
                src = pool[page * page_tokens + tv % page_tokens]
            else:
                src = K[tv]
            for g in range(D // 64):
                dst = s_base + (i * 16 * D + g * 64) * 2
                e = (dst - sK) // 2
                assert e not in written; written.add(e)
                sm.put(dst // 2, src[g*64+sub*8:g*64+sub*8+8] if valid else [0.0] * 8)
    assert len(written) == BKV * D // 8
    Kt = [K[kv0 + r] if kv0 + r < kv_end else [0.0] * D for r in range(BKV)]
    for r in range(BKV):
        for ch in range(D // 8):
            assert sm.h[sK // 2 + swz(r, ch): sK // 2 + swz(r, ch) + 8] == Kt[r][ch*8:ch*8+8], (r, ch)
    S = [[None] * BKV for _ in range(16)]
    for w in range(WARPS):
        sKw = sK + w * KW * D * 2
        rS = [[[0.0] * 4 for _ in range(32)] for _ in range(KW // 8)]
        if KW == 16:  # warp_qk<576, 16, 1>
            for kd in range(D // 16):
                A = ldsm(sm, [sQ + (l % 16) * D * 2 + (ldsm_lane_xor(l // 16, l) ^ (kd * 32)) for l in range(32)])
                B = ldsm(sm, [sKw + (l % 8 + (l // 16) * 8) * D * 2 + (ldsm_lane_xor((l // 8) % 2, l) ^ (kd * 32)) for l in range(32)])
                mma(rS[0], A, [B[l][0] for l in range(32)], [B[l][1] for l in range(32)])
                mma(rS[1], A, [B[l][2] for l in range(32)], [B[l][3] for l in range(32)])
        else:
            for kp in range(D // 32):
                B = ldsm(sm, [sKw + (l % 8) * D * 2 + (ldsm_lane_xor(l // 8, l) ^ (kp * 64)) for l in range(32)])
                for h in range(2):
                    A = ldsm(sm, [sQ + (l % 16) * D * 2 + (ldsm_lane_xor(l // 16, l) ^ ((2 * kp + h) * 32)) for l in range(32)])
                    mma(rS[0], A, [B[l][2*h] for l in range(32)], [B[l][2*h+1] for l in range(32)])
        for nt in range(KW // 8):
            for l in range(32):
                col = w * KW + nt * 8 + (l % 4) * 2
                for e in range(2):
                    S[l // 4][col + e] = rS[nt][l][e]; S[l // 4 + 8][col + e] = rS[nt][l][2 + e]
    ref = [[sum(Q[i][k] * Kt[j][k] for k in range(D)) for j in range(BKV)] for i in range(16)]
    assert maxdiff(S, ref) < 1e-6, maxdiff(S, ref)
    P = uni(16, BKV, 0, 1)
    for w in range(WARPS):
        for nt in range(KW // 8):
            for l in range(32):
                col = w * KW + nt * 8 + (l % 4) * 2
                sm.put(sP // 2 + (l // 4) * PPITCH + col, P[l // 4][col:col+2])
                sm.put(sP // 2 + (l // 4 + 8) * PPITCH + col, P[l // 4 + 8][col:col+2])
    O = [[None] * DV for _ in range(16)]
    for w in range(WARPS):
        col0 = w * CW; dp0 = col0 // 16
        rO = [[[0.0] * 4 for _ in range(32)] for _ in range(CW // 8)]
        for kk in range(BKV // 16):
            A = ldsm(sm, [sP + (l % 16) * PPITCH * 2 + (l // 16) * 16 + kk * 32 for l in range(32)])
            for dp in range(CW // 16):
                B = ldsm(sm, [sK + (l % 16) * D * 2 + kk * 16 * D * 2 + (ldsm_lane_xor(l // 16, l) ^ ((dp0 + dp) * 32)) for l in range(32)], trans=True)
                mma(rO[2*dp], A, [B[l][0] for l in range(32)], [B[l][1] for l in range(32)])
                mma(rO[2*dp+1], A, [B[l][2] for l in range(32)], [B[l][3] for l in range(32)])
        for dt in range(CW // 8):
            for l in range(32):
                c = col0 + dt * 8 + (l % 4) * 2
                for e in range(2):
                    O[l // 4][c + e] = rO[dt][l][e]; O[l // 4 + 8][c + e] = rO[dt][l][2 + e]
    refO = [[sum(P[i][k] * Kt[k][c] for k in range(BKV)) for c in range(DV)] for i in range(16)]
    assert maxdiff(O, refO) < 1e-6, maxdiff(O, refO)
    stage = {}
    for w in range(WARPS):
        for l in range(32):
            for hh in range(2):
                row = l // 4 + 8 * hh
                for dt in range(CW // 8):
                    off = swz(row, w * (CW // 8) + dt, DV) + (l % 4) * 2
                    for e in range(2):
                        assert off + e not in stage
                        stage[off + e] = (row, w * CW + dt * 8 + (l % 4) * 2 + e)
    for row in range(16):
        for ch in range(DV // 8):
            for e in range(8):
                assert stage[swz(row, ch, DV) + e] == (row, ch * 8 + e)
    print("ok", BKV, paged, kv0, kv_end, flush=True)
LOG2E = 1.4426950408889634

def run(B, H, N, NKV, BKV, splits, paged=False, page_tokens=16):
    WARPS, KW, CW, PP = 4, BKV // 4, DV // 4, BKV + 8
    Q = [[[random.uniform(-1, 1) for _ in range(D)] for _ in range(H * N)] for _ in range(B)]
    K = [[[random.uniform(-1, 1) for _ in range(D)] for _ in range(NKV)] for _ in range(B)]
    scale = 1 / math.sqrt(D); sl2 = scale * LOG2E
    tiles = (NKV + BKV - 1) // BKV
    split_tokens = (tiles + splits - 1) // splits * BKV
    assert (NKV + split_tokens - 1) // split_tokens == splits
    pps = (NKV + page_tokens - 1) // page_tokens
    table = list(range(B * pps)); random.shuffle(table)
    pool = [[NAN] * D for _ in range(B * pps * page_tokens)]
    for b in range(B):
        for t in range(NKV): pool[table[b * pps + t // page_tokens] * page_tokens + t % page_tokens] = K[b][t]
    rows = H * N
    part_O = {}; part_lse = {}; O = {}; L = {}
    for b in range(B):
        for rb in range((rows + 15) // 16):
            for split in range(splits):
                row0 = rb * 16; m_rows = min(16, rows - row0)
                kv_begin = split * split_tokens; kv_end = min(NKV, kv_begin + split_tokens)
                n_tiles = (kv_end - kv_begin + BKV - 1) // BKV
                first_page = kv_begin // page_tokens
                s_table = table[b * pps + first_page:]
                qb, kb = 16 * D * 2, 2 * BKV * D * 2
                sm = Smem(qb + kb + 16 * PP * 2)
                sQ, sK, sP = 0, qb, qb + kb
                for row in range(16):
                    for ch in range(D // 8):
                        sm.put(sQ // 2 + swz(row, ch), Q[b][row0 + row][ch*8:ch*8+8] if row < m_rows else [0.0] * 8)
                def load(tile, stage):
                    kv0 = kv_begin + tile * BKV
                    for tid in range(128):
                        sub, r16 = tid % 8, tid // 8
                        s_base = sK + stage * BKV * D * 2 + 2 * (r16 * D + ((sub ^ (r16 % 8)) << 3))
                        for i in range(BKV // 16):
                            t = kv0 + i * 16 + r16; valid = t < kv_end; tv = t if valid else kv0
                            if paged:
                                page = s_table[tv // page_tokens - first_page]
                                src = pool[page * page_tokens + tv % page_tokens]
                            else: src = K[b][tv]
                            for g in range(D // 64):
                                dst = s_base + (i * 16 * D + g * 64) * 2
                                sm.put(dst // 2, src[g*64+sub*8:g*64+sub*8+8] if valid else [0.0] * 8)
                rO = [[[[0.0] * 4 for _ in range(32)] for _ in range(CW // 8)] for _ in range(WARPS)]
                row_m = [[[-math.inf] * 2 for _ in range(32)] for _ in range(WARPS)]
                row_l = [[[0.0] * 2 for _ in range(32)] for _ in range(WARPS)]
                for j in range(n_tiles):
                    stage = j & 1
                    load(j, stage)  # (issued one step earlier in the kernel; same data)
                    sKs = sK + stage * BKV * D * 2
                    s_max = [None] * 64
                    rSw = []
                    for w in range(WARPS):
                        sKw = sKs + w * KW * D * 2
                        rS = [[[0.0] * 4 for _ in range(32)] for _ in range(KW // 8)]
                        if KW == 16:
                            for kd in range(D // 16):
                                A = ldsm(sm, [sQ + (l % 16) * D * 2 + (ldsm_lane_xor(l // 16, l) ^ (kd * 32)) for l in range(32)])
                                Bf = ldsm(sm, [sKw + (l % 8 + (l // 16) * 8) * D * 2 + (ldsm_lane_xor((l // 8) % 2, l) ^ (kd * 32)) for l in range(32)])
                                mma(rS[0], A, [Bf[l][0] for l in range(32)], [Bf[l][1] for l in range(32)])
                                mma(rS[1], A, [Bf[l][2] for l in range(32)], [Bf[l][3] for l in range(32)])
                        else:
                            for kp in range(D // 32):
                                Bf = ldsm(sm, [sKw + (l % 8) * D * 2 + (ldsm_lane_xor(l // 8, l) ^ (kp * 64)) for l in range(32)])
                                for h in range(2):
                                    A = ldsm(sm, [sQ + (l % 16) * D * 2 + (ldsm_lane_xor(l // 16, l) ^ ((2 * kp + h) * 32)) for l in range(32)])
                                    mma(rS[0], A, [Bf[l][2*h] for l in range(32)], [Bf[l][2*h+1] for l in range(32)])
                        kv0w = kv_begin + j * BKV + w * KW
                        need = kv0w + KW > kv_end
                        for nt in range(KW // 8):
                            for l in range(32):
                                for e in range(4):
                                    s = rS[nt][l][e] * sl2
                                    if need and kv0w + nt * 8 + (l % 4) * 2 + (e & 1) >= kv_end: s = -math.inf
                                    rS[nt][l][e] = s
                        wm = []
                        for l in range(32):
                            mm = []
                            for h in range(2):
                                m = -math.inf
                                for nt in range(KW // 8): m = max(m, rS[nt][l][2*h], rS[nt][l][2*h+1])
                                mm.append(m)
                            wm.append(mm)
                        wm2 = [[max(wm[(l & ~3) + q][h] for q in range(4)) for h in range(2)] for l in range(32)]
                        for l in range(32):
                            if l % 4 == 0:
                                s_max[w * 16 + l // 4] = wm2[l][0]; s_max[w * 16 + l // 4 + 8] = wm2[l][1]
                        rSw.append(rS)
                    for w in range(WARPS):
                        rS = rSw[w]
                        for l in range(32):
                            for hh in range(2):
                                m = row_m[w][l][hh]
                                for ww in range(WARPS): m = max(m, s_max[ww * 16 + l // 4 + hh * 8])
                                m_use = 0.0 if m == -math.inf else m
                                ssum = 0.0
                                for nt in range(KW // 8):
                                    for e in range(2):
                                        p = 2 ** (rS[nt][l][2*hh+e] - m_use) if rS[nt][l][2*hh+e] != -math.inf else 0.0
                                        rS[nt][l][2*hh+e] = p; ssum += p
                                alpha = 2 ** (row_m[w][l][hh] - m_use) if row_m[w][l][hh] != -math.inf else 0.0
                                row_l[w][l][hh] = row_l[w][l][hh] * alpha + ssum
                                row_m[w][l][hh] = m
                                for dt in range(CW // 8):
                                    rO[w][dt][l][2*hh] *= alpha; rO[w][dt][l][2*hh+1] *= alpha
                        for nt in range(KW // 8):
                            for l in range(32):
                                col = w * KW + nt * 8 + (l % 4) * 2
                                sm.put(sP // 2 + (l // 4) * PP + col, rS[nt][l][0:2])
                                sm.put(sP // 2 + (l // 4 + 8) * PP + col, rS[nt][l][2:4])
                    for w in range(WARPS):
                        dp0 = w * CW // 16
                        for kk in range(BKV // 16):
                            A = ldsm(sm, [sP + (l % 16) * PP * 2 + (l // 16) * 16 + kk * 32 for l in range(32)])
                            for dp in range(CW // 16):
                                Bf = ldsm(sm, [sKs + (l % 16) * D * 2 + kk * 16 * D * 2 + (ldsm_lane_xor(l // 16, l) ^ ((dp0 + dp) * 32)) for l in range(32)], trans=True)
                                mma(rO[w][2*dp], A, [Bf[l][0] for l in range(32)], [Bf[l][1] for l in range(32)])
                                mma(rO[w][2*dp+1], A, [Bf[l][2] for l in range(32)], [Bf[l][3] for l in range(32)])
                s_sum = [None] * 64
                for w in range(WARPS):
                    for l in range(32):
                        for hh in range(2):
                            lsum = sum(row_l[w][(l & ~3) + q][hh] for q in range(4))
                            if l % 4 == 0: s_sum[w * 16 + l // 4 + hh * 8] = lsum
                for w in range(WARPS):
                    for l in range(32):
                        for hh in range(2):
                            lt = sum(s_sum[ww * 16 + l // 4 + hh * 8] for ww in range(WARPS))
                            inv = 1 / lt if lt > 0 else 0.0
                            lse = (row_m[w][l][hh] + math.log2(lt)) * math.log(2) if lt > 0 else -math.inf
                            row = l // 4 + hh * 8
                            if row >= m_rows: continue
                            q_row = b * rows + row0 + row
                            for dt in range(CW // 8):
                                for e in range(2):
                                    col = w * CW + dt * 8 + (l % 4) * 2 + e
                                    v = rO[w][dt][l][2*hh+e] * inv
                                    if splits == 1: O[(q_row, col)] = v
                                    else:
                                        prow = (q_row // N * splits + split) * N + q_row % N
                                        part_O[prow * DV + col] = v
                            if w == 0 and l % 4 == 0:
                                if splits == 1: L[q_row] = lse
                                else: part_lse[(q_row // N * splits + split) * N + q_row % N] = lse
    if splits > 1:  # decode_reduce_kernel<512>: lanes 32, 4 float4 per lane
        for row in range(B * rows):
            bh, n = row // N, row % N
            lses = [part_lse[bh * splits * N + n + s * N] for s in range(splits)]
            m = max(lses); tot = sum(math.exp(x - m) for x in lses)
            for v in range(4):
                for lane in range(32):
                    for c4 in range(4):
                        col = (v * 32 + lane) * 4 + c4
                        O[(row, col)] = sum(math.exp(lses[s] - m) / tot * part_O[(bh * splits * N + n) * DV + s * N * DV + col] for s in range(splits))
            L[row] = m + math.log(tot)
    err = 0.0; lerr = 0.0
    for b in range(B):
        for r in range(rows):
            sc = [scale * sum(Q[b][r][k] * K[b][j][k] for k in range(D)) for j in range(NKV)]
            m = max(sc); ps = [math.exp(x - m) for x in sc]; tot = sum(ps)
            for c in range(DV):
                ref = sum(ps[j] * K[b][j][c] for j in range(NKV)) / tot
                err = max(err, abs(O[(b * rows + r, c)] - ref))
            lerr = max(lerr, abs(L[b * rows + r] - (m + math.log(tot))))
    assert len(O) == B * rows * DV
    print(f"B={B} H={H} N={N} Nkv={NKV} bkv={BKV} splits={splits} paged={paged}: max|O err| {err:.2e} lse err {lerr:.2e}", flush=True)
    assert err < 1e-9 and lerr < 1e-9

run_tile(64, False)
run_tile(32, False)
run_tile(64, True, kv0=128)
run_tile(32, True, kv0=256)   # ragged: keys 256..299 of 32 -> all valid; 
run_tile(64, True, kv0=256)   # ragged: 44 of 64 valid
run_tile(64, False, kv0=256)
run_tile(32, False, kv0=288)  # ragged 12 of 32
run(1, 5, 2, 70, 32, 2)                 # rows 10 (padding), ragged, 2 splits, N = 2
run(1, 17, 1, 100, 64, 1, paged=True, page_tokens=16)  # 2 row blocks, 2 tiles, splits 1, pages
run(2, 3, 1, 90, 32, 3, paged=True, page_tokens=48)    # split starts mid-page
