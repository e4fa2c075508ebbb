package model

import (
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// serverPhases is the request law of P >= 3 phases (k_1, ..., k_P
// accesses) on one server, requests arriving alone at rate: wait is the
// stationary work of whole requests, sums[c] the law of c service times,
// net the reply's network delay. It carries oneServerTwoPhases's
// argument to P phases.
//
// The server serves accesses in the order they are queued, and a phase is
// queued when the one before it ends. So a phase of an earlier request
// queued ahead of this request's phase i has its next phase queued ahead
// of phase i+1, and a request that arrives in this one's window i (while
// its phase i waits or runs) puts its phases 1, 2, ... ahead of this
// one's phases i+1, i+2, ...: its phases 1 to P-i come before this
// request ends. The server is busy from the arrival to the end (a phase is
// queued as the one before it ends), so the latency is the sum of the
// windows, window i holding the work queued ahead of phase i and phase
// i's k_i accesses; the windows' lengths set how many arrive in each.
//
// What the request finds is split by the last request to arrive before it
// (age τ, exponential at rate): that one found the stationary work W' and
// queued its first phase; taken as if all of W' were ahead of it (as for
// two phases), its phase j ends at Z_j = W' + S(k_1 + ... + k_j). At
// this request's arrival it is in the phase j with Z_{j-1} <= τ < Z_j:
// the server holds X = Z_j - τ queued, and that request's phases j+1,
// j+2, ... come ahead of this one's phases 2, 3, ...; past Z_P (or past
// the grid) the server holds nothing. Left out, as for two phases: the
// requests older than the last one still short of their last phase (their
// later phases are taken as work queued ahead of the last one's first).
// The two-phase form of this (two windows) is oneServerTwoPhases's law.
func (g grid) serverPhases(wait []float64, sums [][]float64, phases []int, rate float64, net []float64) []float64 {
	P := len(phases)
	age := make([]float64, g.n) // age[a]: the last arrival is a cells old
	for a := range age {
		lo := math.Max(0, (float64(a)-0.5)*g.h)
		age[a] = math.Exp(-rate*lo) - math.Exp(-rate*(float64(a)+0.5)*g.h)
	}
	older := math.Exp(-rate * (float64(g.n) - 0.5) * g.h) // past the grid: idle
	// found[j]: the law of X (a part) while the last request is in its
	// phase j+1; gap: τ - Z_j > 0 while its phases so far have ended.
	found := make([][]float64, P)
	found[0] = make([]float64, g.n)
	gap := make([]float64, g.n)
	z := convolve(wait, sums[phases[0]])
	for a, wa := range age {
		if wa < 1e-16 {
			continue
		}
		for c, v := range z {
			if c >= a {
				found[0][c-a] += wa * v
			} else {
				gap[a-c] += wa * v
			}
		}
	}
	for j := 1; j < P; j++ {
		found[j] = make([]float64, g.n)
		next := make([]float64, g.n)
		for gp, wg := range gap {
			if wg < 1e-16 {
				continue
			}
			for c, v := range sums[phases[j]] {
				switch {
				case c >= gp:
					found[j][c-gp] += wg * v
				case j == P-1:
					found[j][0] += wg * v
				default:
					next[gp-c] += wg * v
				}
			}
		}
		gap = next
	}
	found[P-1][0] += older
	return cumulative(g.phaseWindows(found, sums, phases, rate, net))
}

// windowTilt sets phaseWindows's damping: the law is transformed times
// e^(-windowTilt·i/N) at cell i (N twice the grid's cells), so that what
// lies beyond N cells comes back onto the grid e^-windowTilt smaller
// (1e-13), and the grid's last cell is read e^(windowTilt/2) larger
// (3e6 times the transform's rounding, 1e-16).
const windowTilt = 30.0

// phaseWindows is the latency law (a pmf) of a request of the given
// phases on one server that finds found[j] (a part of the law of the work
// queued) with the last request in its phase j+1, whose later phases then
// come ahead of this one's phases 2, 3, ...
//
// Window i's length is its accesses' service times (for the first, also
// the work found), and the requests arriving within it (Poisson at rate
// given its length) each add k_l accesses to window i+l. With z the
// transform variable of the latency, and σ(z) = E[z^S] a service time's,
// each window is then a sum of service times whose transform variable is
// z_i = z·exp(rate·h·(ρ_i - 1)), ρ_i = Π_l σ(z_{i+l})^{k_l} being an
// arrival's part in the later windows (z_P = z: arrivals in the last
// window come after the request). The law is read back from the transform
// on the unit circle (damped: windowTilt). It is the law of counting each
// window's arrivals one by one, without the counts' truncation; the first
// window's law (the work found and k_1 accesses) is split by its count
// on the grid and transformed, the service law evaluated at each z_i.
func (g grid) phaseWindows(found [][]float64, sums [][]float64, phases []int, rate float64, net []float64) []float64 {
	P, N := len(phases), 2*g.n
	ft := fourier.NewFFT(N)
	damp := math.Exp(-windowTilt / float64(N))
	transform := func(p []float64) []complex128 {
		buf := make([]float64, N)
		for c, v := range p {
			buf[c] = v * math.Pow(damp, float64(c))
		}
		return ft.Coefficients(nil, buf)
	}
	// counted[j][n]: the transform of the first window's law where n
	// requests arrive in it, with the last request in its phase j+1.
	counted := make([][][]complex128, len(found))
	for j, x := range found {
		first := convolve(x, sums[phases[0]])
		mass := 0.0
		for _, p := range first {
			mass += p
		}
		for n, got := 0, 0.0; n < 256 && mass-got > 1e-13; n++ {
			part := make([]float64, g.n)
			for c, p := range first {
				mean := rate * float64(c) * g.h
				switch {
				case mean > 0:
					part[c] = p * math.Exp(float64(n)*math.Log(mean)-mean-lgammaInt(n+1))
				case n == 0:
					part[c] = p
				}
				got += part[c]
			}
			counted[j] = append(counted[j], transform(part))
		}
	}
	svc := sums[1]
	for len(svc) > 1 && svc[len(svc)-1] < 1e-18 {
		svc = svc[:len(svc)-1]
	}
	netT := transform(net)
	coeff := make([]complex128, N/2+1)
	sigma := make([]complex128, P) // σ(z_i)
	for k := range coeff {
		z := complex(damp, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k)/float64(N)))
		var rho complex128 // ρ_i, down to the first window's
		for i := P - 1; i >= 0; i-- {
			rho = 1
			for l := 1; i+l < P; l++ {
				rho *= ipowC(sigma[i+l], phases[l-1])
			}
			if i > 0 {
				sigma[i] = polyAt(svc, z*cmplx.Exp(complex(rate*g.h, 0)*(rho-1)))
			}
		}
		var sum complex128
		for j, parts := range counted {
			var v, pw complex128 = 0, 1
			for _, part := range parts {
				v += part[k] * pw
				pw *= rho
			}
			for i := 1; i < P; i++ {
				ahead := phases[i] // its own and the last request's phase
				if j+i < P {
					ahead += phases[j+i]
				}
				v *= ipowC(sigma[i], ahead)
			}
			sum += v
		}
		coeff[k] = sum * netT[k]
	}
	seq := ft.Sequence(nil, coeff)
	out := make([]float64, g.n)
	for i := range out {
		out[i] = math.Max(0, seq[i]/float64(N)*math.Exp(windowTilt*float64(i)/float64(N)))
	}
	return out
}

// polyAt is Σ p[i] z^i.
func polyAt(p []float64, z complex128) complex128 {
	zr, zi := real(z), imag(z)
	var vr, vi float64
	for i := len(p) - 1; i >= 0; i-- {
		vr, vi = vr*zr-vi*zi+p[i], vr*zi+vi*zr
	}
	return complex(vr, vi)
}

// ipowC is x^n for n >= 0.
func ipowC(x complex128, n int) complex128 {
	out := complex(1, 0)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			out *= x
		}
		x *= x
	}
	return out
}
