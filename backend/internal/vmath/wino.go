package vmath

import "fmt"

// Float is the element types of the Winograd transforms.
type Float interface{ ~float32 | ~float64 }

// WinoInput writes the Winograd F(2×2, 3×3) input transform Bᵀ·d·B of
// n tiles into 16 planes of dst, stride values apart: the tile t's value
// ξ at dst[ξ·stride + t]. rows holds four zero-padded input rows, ld
// values apart, each of at least 2n+2 values; the tile t is their columns
// 2t…2t+3. In float32 with AVX2 the tiles run through a vector kernel
// giving winoInputGo's bits: all of them where the rows have
// WinoInputLd(n) values (ld and len(rows) allowing; what the columns
// past 2n+2 hold does not matter), otherwise whole groups of 8, and the
// rest through winoInputGo.
func WinoInput[T Float](rows []T, ld int, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	if ld < 2*n+2 || len(rows) < 3*ld+2*n+2 || stride < n || len(dst) < 15*stride+n {
		panic(fmt.Sprintf("vmath: WinoInput: %d tiles, rows %d (ld %d), dst %d (stride %d)", n, len(rows), ld, len(dst), stride))
	}
	if r32, ok := any(rows).([]float32); ok {
		winoInputWith(active, r32, ld, any(dst).([]float32), stride, n)
		return
	}
	winoInputGo(rows, ld, dst, stride, n)
}

// WinoInputLd is the row length that lets WinoInput's vector kernel take
// all of n tiles, the last n mod 8 as a group of 8: 2·⌈n/8⌉·8 + 2.
func WinoInputLd(n int) int { return 2*((n+7)&^7) + 2 }

// winoInputWith is WinoInput in float32 with kernel k, on checked
// arguments.
func winoInputWith(k kernel, rows []float32, ld int, dst []float32, stride, n int) {
	v := 0
	if k.hasWino() {
		v = n &^ 7
		if w := WinoInputLd(n); ld >= w && len(rows) >= 3*ld+w {
			v = n
		}
	}
	if v > 0 {
		winoInputAVX2(&rows[0], ld, &dst[0], stride, v)
	}
	winoInputGo(rows[2*v:], ld, dst[v:], stride, n-v)
}

// winoInputGo is WinoInput's scalar loop.
func winoInputGo[T Float](rows []T, ld int, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	d0, d1, d2, d3 := rows[:2*n+2], rows[ld:][:2*n+2], rows[2*ld:][:2*n+2], rows[3*ld:][:2*n+2]
	o := planes(dst, stride, n)
	for t := 0; t < n; t++ {
		j := 2 * t
		s0, s1, s2, s3 := d0[j:j+4:j+4], d1[j:j+4:j+4], d2[j:j+4:j+4], d3[j:j+4:j+4]
		// Bᵀ·d, column by column, then ·B along each row.
		a0, a1, a2, a3 := s0[0]-s2[0], s0[1]-s2[1], s0[2]-s2[2], s0[3]-s2[3]
		b0, b1, b2, b3 := s1[0]+s2[0], s1[1]+s2[1], s1[2]+s2[2], s1[3]+s2[3]
		e0, e1, e2, e3 := s2[0]-s1[0], s2[1]-s1[1], s2[2]-s1[2], s2[3]-s1[3]
		f0, f1, f2, f3 := s1[0]-s3[0], s1[1]-s3[1], s1[2]-s3[2], s1[3]-s3[3]
		o[0][t], o[1][t], o[2][t], o[3][t] = a0-a2, a1+a2, a2-a1, a1-a3
		o[4][t], o[5][t], o[6][t], o[7][t] = b0-b2, b1+b2, b2-b1, b1-b3
		o[8][t], o[9][t], o[10][t], o[11][t] = e0-e2, e1+e2, e2-e1, e1-e3
		o[12][t], o[13][t], o[14][t], o[15][t] = f0-f2, f1+f2, f2-f1, f1-f3
	}
}

// WinoOutput writes the Winograd F(2×2, 3×3) output transform Aᵀ·M·A
// plus bias of n tiles, read from 16 planes of src stride values apart
// (the tile t's value ξ at src[ξ·stride + t]), into the rows y0 and y1:
// the tile t at their columns 2t and 2t+1 (2n values each), and reports
// whether every value it wrote is finite. The bias is added to every
// value, zero included (it turns −0 into +0). In float32 with AVX2 a
// vector kernel gives winoOutputGo's bits.
func WinoOutput[T Float](src []T, stride int, y0, y1 []T, n int, bias T) (finite bool) {
	if n <= 0 {
		return true
	}
	if stride < n || len(src) < 15*stride+n || len(y0) < 2*n || len(y1) < 2*n {
		panic(fmt.Sprintf("vmath: WinoOutput: %d tiles, src %d (stride %d), rows %d and %d", n, len(src), stride, len(y0), len(y1)))
	}
	if s32, ok := any(src).([]float32); ok {
		return winoOutputWith(active, s32, stride, any(y0).([]float32), any(y1).([]float32), n, float32(bias)) == 0
	}
	return winoOutputGo(src, stride, y0, y1, n, bias) == 0
}

// winoOutputWith is WinoOutput in float32 with kernel k, on checked
// arguments: it returns the sum of v − v over the values v written (0
// when all are finite, NaN otherwise).
func winoOutputWith(k kernel, src []float32, stride int, y0, y1 []float32, n int, bias float32) float32 {
	if k.hasWino() {
		return winoOutputAVX2(&src[0], stride, &y0[0], &y1[0], n, bias)
	}
	return winoOutputGo(src, stride, y0, y1, n, bias)
}

// winoOutputGo is WinoOutput's scalar loop, returning the sum of v − v
// over the values v written.
func winoOutputGo[T Float](src []T, stride int, y0, y1 []T, n int, bias T) T {
	if n <= 0 {
		return 0
	}
	i := planes(src, stride, n)
	y0, y1 = y0[:2*n], y1[:2*n]
	var nf T
	for t := 0; t < n; t++ {
		// Aᵀ·M: two rows of four, then ·A.
		s0 := i[0][t] + i[4][t] + i[8][t]
		s1 := i[1][t] + i[5][t] + i[9][t]
		s2 := i[2][t] + i[6][t] + i[10][t]
		s3 := i[3][t] + i[7][t] + i[11][t]
		u0 := i[4][t] - i[8][t] - i[12][t]
		u1 := i[5][t] - i[9][t] - i[13][t]
		u2 := i[6][t] - i[10][t] - i[14][t]
		u3 := i[7][t] - i[11][t] - i[15][t]
		o0, o1 := y0[2*t:2*t+2:2*t+2], y1[2*t:2*t+2:2*t+2]
		a, b := s0+s1+s2+bias, s1-s2-s3+bias
		c, d := u0+u1+u2+bias, u1-u2-u3+bias
		o0[0], o0[1], o1[0], o1[1] = a, b, c, d
		nf += (a - a) + (b - b) + (c - c) + (d - d)
	}
	return nf
}

// WinoGrad writes the transform A·dy·Aᵀ of n tiles of an output
// gradient, the tile t at columns 2t and 2t+1 of the rows y0 and y1 (2n
// values each), into 16 planes of dst, stride values apart (the tile t's
// value ξ at dst[ξ·stride + t]): the weight gradient's Z. In float32 with
// AVX2 a vector kernel gives winoGradGo's bits.
func WinoGrad[T Float](y0, y1 []T, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	if len(y0) < 2*n || len(y1) < 2*n || stride < n || len(dst) < 15*stride+n {
		panic(fmt.Sprintf("vmath: WinoGrad: %d tiles, rows %d and %d, dst %d (stride %d)", n, len(y0), len(y1), len(dst), stride))
	}
	if a32, ok := any(y0).([]float32); ok {
		winoGradWith(active, a32, any(y1).([]float32), any(dst).([]float32), stride, n)
		return
	}
	winoGradGo(y0, y1, dst, stride, n)
}

// winoGradWith is WinoGrad in float32 with kernel k, on checked
// arguments.
func winoGradWith(k kernel, y0, y1 []float32, dst []float32, stride, n int) {
	if k.hasWino() {
		winoGradAVX2(&y0[0], &y1[0], &dst[0], stride, n)
		return
	}
	winoGradGo(y0, y1, dst, stride, n)
}

// winoGradGo is WinoGrad's scalar loop.
func winoGradGo[T Float](y0, y1 []T, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	o := planes(dst, stride, n)
	y0, y1 = y0[:2*n], y1[:2*n]
	for t := 0; t < n; t++ {
		r0, r1 := y0[2*t:2*t+2:2*t+2], y1[2*t:2*t+2:2*t+2]
		a, b, c, d := r0[0], r0[1], r1[0], r1[1] // dy = [a b; c d]
		// A·dy: rows [a b], [a+c b+d], [a−c b−d], [−c −d];
		// then ·Aᵀ: a row [p s] becomes [p, p+s, p−s, −s].
		p1, s1 := a+c, b+d
		p2, s2 := a-c, b-d
		o[0][t], o[1][t], o[2][t], o[3][t] = a, a+b, a-b, -b
		o[4][t], o[5][t], o[6][t], o[7][t] = p1, p1+s1, p1-s1, -s1
		o[8][t], o[9][t], o[10][t], o[11][t] = p2, p2+s2, p2-s2, -s2
		o[12][t], o[13][t], o[14][t], o[15][t] = -c, -c-d, d-c, d
	}
}

// WinoFilter writes the Winograd F(2×2, 3×3) filter transform G·g·Gᵀ of
// n 3×3 filters, 9 values each (row by row) fs values apart in w (fs ≥ 9),
// into 16 planes of dst, stride values apart: the filter i's value ξ at
// dst[ξ·stride + i], with
//
//	G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1].
//
// In float32 with AVX2 whole groups of 8 filters run through a vector
// kernel giving winoFilterGo's bits; the rest through winoFilterGo.
func WinoFilter[T Float](w []T, fs int, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	if fs < 9 || 8*fs >= 1<<31 || len(w) < (n-1)*fs+9 || stride < n || len(dst) < 15*stride+n {
		panic(fmt.Sprintf("vmath: WinoFilter: %d filters %d apart, w %d, dst %d (stride %d)", n, fs, len(w), len(dst), stride))
	}
	if w32, ok := any(w).([]float32); ok {
		winoFilterWith(active, w32, fs, any(dst).([]float32), stride, n)
		return
	}
	winoFilterGo(w, fs, dst, stride, n)
}

// winoFilterWith is WinoFilter in float32 with kernel k, on checked
// arguments.
func winoFilterWith(k kernel, w []float32, fs int, dst []float32, stride, n int) {
	v := 0
	if k.hasWino() {
		v = n &^ 7
	}
	if v > 0 {
		winoFilterAVX2(&w[0], fs, &dst[0], stride, v)
	}
	if v < n {
		winoFilterGo(w[v*fs:], fs, dst[v:], stride, n-v)
	}
}

// winoFilterGo is WinoFilter's scalar loop.
func winoFilterGo[T Float](w []T, fs int, dst []T, stride, n int) {
	if n <= 0 {
		return
	}
	o := planes(dst, stride, n)
	for j := range o[0] {
		g := w[j*fs : j*fs+9 : j*fs+9]
		// G·g: four rows of three (column by column of g's rows).
		t00, t01, t02 := g[0], g[1], g[2]
		t10, t11, t12 := (g[0]+g[3]+g[6])*0.5, (g[1]+g[4]+g[7])*0.5, (g[2]+g[5]+g[8])*0.5
		t20, t21, t22 := (g[0]-g[3]+g[6])*0.5, (g[1]-g[4]+g[7])*0.5, (g[2]-g[5]+g[8])*0.5
		t30, t31, t32 := g[6], g[7], g[8]
		// ·Gᵀ along each row.
		o[0][j], o[1][j], o[2][j], o[3][j] = t00, (t00+t01+t02)*0.5, (t00-t01+t02)*0.5, t02
		o[4][j], o[5][j], o[6][j], o[7][j] = t10, (t10+t11+t12)*0.5, (t10-t11+t12)*0.5, t12
		o[8][j], o[9][j], o[10][j], o[11][j] = t20, (t20+t21+t22)*0.5, (t20-t21+t22)*0.5, t22
		o[12][j], o[13][j], o[14][j], o[15][j] = t30, (t30+t31+t32)*0.5, (t30-t31+t32)*0.5, t32
	}
}

// WinoFilterGrad adds the Winograd F(2×2, 3×3) weight gradient's inverse
// transform Gᵀ·dU·G of n filters, read from 16 planes of du stride values
// apart (the filter i's value ξ at du[ξ·stride + i]), into dw (9 values a
// filter, row by row), and reports whether every value of dw it wrote is
// finite. In float32 with AVX2 whole groups of 8 filters run through a
// vector kernel giving winoFilterGradGo's bits; the rest through
// winoFilterGradGo.
func WinoFilterGrad[T Float](du []T, stride int, dw []T, n int) (finite bool) {
	if n <= 0 {
		return true
	}
	if stride < n || len(du) < 15*stride+n || len(dw) < 9*n {
		panic(fmt.Sprintf("vmath: WinoFilterGrad: %d filters, du %d (stride %d), dw %d", n, len(du), stride, len(dw)))
	}
	if d32, ok := any(du).([]float32); ok {
		return winoFilterGradWith(active, d32, stride, any(dw).([]float32), n) == 0
	}
	return winoFilterGradGo(du, stride, dw, n) == 0
}

// winoFilterGradWith is WinoFilterGrad in float32 with kernel k, on
// checked arguments, returning the sum of v − v over the values v
// written.
func winoFilterGradWith(k kernel, du []float32, stride int, dw []float32, n int) float32 {
	v := 0
	if k.hasWino() {
		v = n &^ 7
	}
	var nf float32
	if v > 0 {
		var tmp [80]float32
		winoFilterGradAVX2(&du[0], stride, &dw[0], v, &tmp[0])
		for _, s := range tmp[72:] {
			nf += s
		}
	}
	return nf + winoFilterGradGo(du[v:], stride, dw[9*v:], n-v)
}

// winoFilterGradGo is WinoFilterGrad's scalar loop, returning the sum of
// v − v over the values v written.
func winoFilterGradGo[T Float](du []T, stride int, dw []T, n int) T {
	if n <= 0 {
		return 0
	}
	d := planes(du, stride, n)
	dw = dw[:9*n]
	var nf T
	for j := range d[0] {
		// Gᵀ·dU: three rows of four, column by column.
		u0, u1, u2, u3 := d[0][j], d[4][j], d[8][j], d[12][j]
		t00, t10, t20 := u0+(u1+u2)*0.5, (u1-u2)*0.5, (u1+u2)*0.5+u3
		u0, u1, u2, u3 = d[1][j], d[5][j], d[9][j], d[13][j]
		t01, t11, t21 := u0+(u1+u2)*0.5, (u1-u2)*0.5, (u1+u2)*0.5+u3
		u0, u1, u2, u3 = d[2][j], d[6][j], d[10][j], d[14][j]
		t02, t12, t22 := u0+(u1+u2)*0.5, (u1-u2)*0.5, (u1+u2)*0.5+u3
		u0, u1, u2, u3 = d[3][j], d[7][j], d[11][j], d[15][j]
		t03, t13, t23 := u0+(u1+u2)*0.5, (u1-u2)*0.5, (u1+u2)*0.5+u3
		// ·G along each row.
		g := dw[j*9 : j*9+9 : j*9+9]
		g[0] += t00 + (t01+t02)*0.5
		g[1] += (t01 - t02) * 0.5
		g[2] += (t01+t02)*0.5 + t03
		g[3] += t10 + (t11+t12)*0.5
		g[4] += (t11 - t12) * 0.5
		g[5] += (t11+t12)*0.5 + t13
		g[6] += t20 + (t21+t22)*0.5
		g[7] += (t21 - t22) * 0.5
		g[8] += (t21+t22)*0.5 + t23
		nf += (g[0] - g[0]) + (g[1] - g[1]) + (g[2] - g[2]) + (g[3] - g[3]) + (g[4] - g[4]) +
			(g[5] - g[5]) + (g[6] - g[6]) + (g[7] - g[7]) + (g[8] - g[8])
	}
	return nf
}

// planes returns the 16 planes' first n values of a, stride apart.
func planes[T Float](a []T, stride, n int) (p [16][]T) {
	for k := range p {
		p[k] = a[k*stride:][:n]
	}
	return p
}
