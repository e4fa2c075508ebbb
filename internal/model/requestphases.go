package model

import (
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/floats"
)

// serverPhases is the request law of P >= 2 phases (k_1, ..., k_P
// accesses) on one server, requests arriving alone at rate: wait is the
// stationary work of whole requests (what comes ahead of a request's
// later phases: those of a request still in an earlier phase are queued
// when it ends, before the new request's next phase is), sums[c] the law
// of c service times, net the law of the phases' network delays together
// (phasesNet: each phase ends with its last reply, after which the next is
// sent; the work arriving meanwhile is taken as queued behind it, as at
// low load it mostly is).
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
// The first phase waits only for the work already queued.
//
// What the request finds is split by the last request to arrive before it
// (age τ, exponential at rate): that one found the stationary work W' and
// queued its first phase; taken as if all of W' were ahead of it, its
// phase j ends at Z_j = W' + S(k_1 + ... + k_j). At this request's
// arrival it is in the phase j with Z_{j-1} <= τ < Z_j: the server holds
// X = Z_j - τ queued, and that request's phases j+1, j+2, ... come ahead
// of this one's phases 2, 3, ...; past Z_P (or past the grid) the server
// holds nothing. For two phases: L = Y + A(Y) + S(k_2), with Y = X +
// S(k_1) and A(Y) the first phases arriving within Y, and S(k_2) more if
// the last request is still in its first phase. Left out: the requests older than the last one
// still short of their last phase (their later phases are taken as work
// queued ahead of the last one's first; for two phases, their first
// phases end before the last one's).
func (g grid) serverPhases(wait []float64, sums [][]float64, phases []int, rate float64, net []float64) []float64 {
	P := len(phases)
	// found[j]: the law of X (a part) while the last request is in its
	// phase j+1; gap: τ - Z_j > 0 while its phases so far have ended.
	found := make([][]float64, P)
	var gap []float64
	var older float64 // past the grid: idle
	found[0], gap, older = g.sinceLast(convolve(wait, sums[phases[0]]), rate)
	for j := 1; j < P; j++ {
		// Phase j+1 of the last request ends S(k_{j+1}) - gap after this
		// one arrives: that far ahead if it is still running, else a gap
		// more (after its last phase, none).
		found[j], gap = differenceLaw(sums[phases[j]], gap)
	}
	for _, v := range gap {
		found[P-1][0] += v
	}
	found[P-1][0] += older
	return cumulative(g.phaseWindows(found, sums, phases, rate, net))
}

// windowTilt sets the damping of windowSpectra's transforms: a law is
// transformed times e^(-windowTilt·i/N) at cell i (N twice the grid's
// cells), so that what lies beyond N cells comes back onto the grid
// e^-windowTilt smaller (1e-13), and the grid's last cell is read
// e^(windowTilt/2) larger (3e6 times the transform's rounding, 1e-16).
const windowTilt = 30.0

// windowSpectra are the transforms of a request's windows (phases on one
// server or group, requests arriving at rate), at the N/2+1 points z_k =
// e^(-windowTilt/N) e^(-2πik/N) of a damped circle. Window i's length is
// service times (its accesses and those the work ahead brings), and the
// requests arriving within it (Poisson at rate given its length) each add
// k_l accesses to window i+l. With σ(z) = E[z^S] a service time's
// transform, each window is then a sum of service times whose transform
// variable is z_i = z·exp(rate·h·(ρ_i - 1)), ρ_i = Π_l σ(z_{i+l})^{k_l}
// being the transform of all that an arrival in window i adds to the
// latency (z_P = z: arrivals in the last window come after the request).
type windowSpectra struct {
	grid
	ft       *fourier.FFT
	damp     float64
	sig, arr [][]complex128 // sig[i][k] = σ(z_i), arr[i][k] = ρ_i at z_k
}

func (g grid) newWindowSpectra(svc []float64, phases []int, rate float64) *windowSpectra {
	P, N := len(phases), 2*g.n
	w := &windowSpectra{grid: g, ft: fourier.NewFFT(N), damp: math.Exp(-windowTilt / float64(N))}
	for len(svc) > 1 && svc[len(svc)-1] < 1e-18 {
		svc = svc[:len(svc)-1]
	}
	w.sig, w.arr = make([][]complex128, P), make([][]complex128, P)
	for i := range w.sig {
		w.sig[i], w.arr[i] = make([]complex128, N/2+1), make([]complex128, N/2+1)
	}
	for k := 0; k <= N/2; k++ {
		z := complex(w.damp, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k)/float64(N)))
		for i := P - 1; i >= 0; i-- {
			rho := complex(1, 0)
			for l := 1; i+l < P; l++ {
				rho *= ipowC(w.sig[i+l][k], phases[l-1])
			}
			w.arr[i][k] = rho
			w.sig[i][k] = polyAt(svc, z*cmplx.Exp(complex(rate*g.h, 0)*(rho-1)))
		}
	}
	return w
}

// transform is p's damped transform.
func (w *windowSpectra) transform(p []float64) []complex128 {
	buf := make([]float64, w.ft.Len())
	for c, v := range p {
		buf[c] = v * math.Pow(w.damp, float64(c))
	}
	return w.ft.Coefficients(nil, buf)
}

// law is the law on the grid whose damped transform is coeff.
func (w *windowSpectra) law(coeff []complex128) []float64 {
	N := w.ft.Len()
	seq := w.ft.Sequence(nil, coeff)
	out := make([]float64, w.n)
	for i := range out {
		out[i] = math.Max(0, seq[i]/float64(N)*math.Exp(windowTilt*float64(i)/float64(N)))
	}
	return out
}

// phaseWindows is the latency law (a pmf) of a request of the given
// phases on one server that finds found[j] (a part of the law of the work
// queued) with the last request in its phase j+1, whose later phases then
// come ahead of this one's phases 2, 3, ... The windows are
// windowSpectra's, read back from the transform: it is the law of counting
// each window's arrivals one by one, without the counts' truncation. The
// first window's law (the work found and k_1 accesses) is split by its
// count of arrivals on the grid and transformed.
func (g grid) phaseWindows(found [][]float64, sums [][]float64, phases []int, rate float64, net []float64) []float64 {
	P := len(phases)
	w := g.newWindowSpectra(sums[1], phases, rate)
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
			part := g.arrivalChances(rate, n)
			for c, p := range first {
				part[c] *= p
				got += part[c]
			}
			counted[j] = append(counted[j], w.transform(part))
		}
	}
	netT := w.transform(net)
	coeff := make([]complex128, len(netT))
	for k := range coeff {
		var sum complex128
		for j, parts := range counted {
			var v, pw complex128 = 0, 1
			for _, part := range parts {
				v += part[k] * pw
				pw *= w.arr[0][k]
			}
			for i := 1; i < P; i++ {
				ahead := phases[i] // its own and the last request's phase
				if j+i < P {
					ahead += phases[j+i]
				}
				v *= ipowC(w.sig[i][k], ahead)
			}
			sum += v
		}
		coeff[k] = sum * netT[k]
	}
	return w.law(coeff)
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

// groupPhases is the request law of P >= 3 phases on one group of d > 1
// duplicates, requests arriving alone at rate (wait, sums and net as
// oneGroupShared takes them). Every duplicate gets every access, and a
// phase is queued at all of them when the first is done with the one
// before, so each duplicate is busy from the arrival to its end: as on
// one server, a request arriving in window i (before the first duplicate
// is done with phase i) puts its phases 1 to P-i ahead of this request's
// later phases at every duplicate. The first P-1 phases are taken as one
// (oneGroupShared's first phase, its history correction with them), and
// the arrivals within them as its arrivals, each with the work of the
// window it falls in (windowLumps).
func (g grid) groupPhases(phases []int, sums [][]float64, wait, net []float64, rate float64, d int) []float64 {
	P := len(phases)
	early := 0
	for _, k := range phases[:P-1] {
		early += k
	}
	return g.oneGroupShared([]int{early, phases[P-1]}, sums, wait, net, rate, d, &windowLumps{phases: phases, rate: rate, d: d})
}

// windowLumps is the work a request arriving before the first of d
// duplicates is done with the first P-1 phases puts ahead of the last
// phase: if it falls in window i, its phases 1 to P-i and what the
// requests arriving during those of them in windows before the last add
// (windowSpectra's ρ_i, as on one server, taken at one duplicate). Given
// the duplicates' wait, an arrival after the first (uniform over the time
// to that end, as Poisson arrivals before a time are) falls in window i
// with the chance taken as window i's mean over the mean of that time,
// window i ending when the first duplicate is done with the wait and
// phases 1 to i (the arrivals' own work left out of those ends). The
// chances are kept to steps of windowShare, so that waits alike share one
// law. The first arrival's window is taken as the duplicates share it
// (windowsOn.firstArrival).
type windowLumps struct {
	phases []int
	rate   float64
	d      int
}

// windowShare is the step of windowLumps's chances.
const windowShare = 0.02

// windowsOn is windowLumps on a grid: the laws of what an arrival in each
// window adds, and the sums of service times there.
type windowsOn struct {
	g      grid
	w      *windowLumps
	s      *sumCache
	added  [][]float64 // added[i]: what an arrival in window i+1 adds
	first  []float64   // the first arrival falls in cell u
	lumps  map[int][]float64
	behind map[bool][][2][]float64 // firstArrival's CDFs, by the state's pending
}

// on is w on g (svc the law of a service time there), or nil when w is.
func (w *windowLumps) on(g grid, svc []float64) *windowsOn {
	if w == nil {
		return nil
	}
	none := make([]float64, g.n)
	none[0] = 1
	P := len(w.phases)
	spectra := g.newWindowSpectra(svc, w.phases, w.rate)
	o := &windowsOn{g: g, w: w, s: newSumCache([][]float64{none, svc}), added: make([][]float64, P-1),
		first: make([]float64, g.n), lumps: map[int][]float64{}, behind: map[bool][][2][]float64{}}
	for i := range o.added {
		o.added[i] = spectra.law(spectra.arr[i])
	}
	for u := range o.first {
		o.first[u] = exponentialCell(w.rate, g.h, u)
	}
	return o
}

// lump is the law of the work an arrival within the first P-1 phases puts
// ahead of the last, for a duplicate's wait of law wait, and a key, the
// same for the same law.
func (o *windowsOn) lump(wait []float64) (int, []float64) {
	g, w := o.g, o.w
	mass := floats.Sum(wait)
	if mass <= 0 {
		mass = 1
	}
	P := len(w.phases)
	ends := make([]float64, P) // ends[i]: the mean end of window i
	done := 0
	for i := 1; i < P; i++ {
		done += w.phases[i-1]
		for _, c := range cumulative(convolve(wait, o.s.of(done))) {
			ends[i] += ipow(math.Max(0, 1-c/mass), w.d) * g.h
		}
	}
	key, steps := 0, make([]int, P)
	for i := 1; i < P; i++ {
		if ends[P-1] > 0 {
			steps[i] = int(math.Round((ends[i] - ends[i-1]) / ends[P-1] / windowShare))
		}
		key = key*(1+int(1/windowShare)) + steps[i]
	}
	if l, ok := o.lumps[key]; ok {
		return key, l
	}
	total := 0
	for _, n := range steps {
		total += n
	}
	if total == 0 { // no time to the end: the last window's
		steps[P-1], total = 1, 1
	}
	l := make([]float64, g.n)
	for i := 1; i < P; i++ {
		for c, v := range o.added[i-1] {
			l[c] += float64(steps[i]) / float64(total) * v
		}
	}
	o.lumps[key] = l
	return key, l
}

// firstArrival is oneGroupTwoPhasesFirst's terms of the first arrival
// (at u) for a state of wait law wait (y its end of the first P-1 phases,
// G of law last the work from the last phase on), its window taken as the
// duplicates share it. It falls in window c when every duplicate's end
// of phase c, E_c, is later than u and not every one's end of phase c-1
// is: the same at all of them, and tied to their draws. Then it puts
// L_c (added[c-1]) ahead of the last phase at every one. Given u the
// duplicates are independent, so with D^j_c = P(E_j > u, E_j + R_j + L_c
// + G > t) (R_j the phases j+1 to P-1; E_{P-1} = Y) the chance that it is
// ahead and every duplicate still busy at t is Σ_c (D^c_c)^d - (D^{c-1}_c)^d
// (the c = 1 term without its second part), and the terms are
// E[D_0^d - (D^{P-1}_{P-1})^d] - Σ_{c<P-1} E[(D^c_c)^d - (D^c_{c+1})^d],
// D_0 = P(Y > u, Y + G > t). The later arrivals keep the window by the
// windows' means (lump). Taken so, the first's window was drawn apart at
// each duplicate, whose first one done mostly found the later windows'
// shorter lumps: three phases of 10 on 4x1 and 8x1 at 30% load were
// +0.0041 and +0.0044 off the simulator at the 90th percentile's bound
// (10^6 requests), where two phases of 20 and 10, without windows, are
// +0.0004 and -0.0004; now -0.0004 and -0.0001.
func (o *windowsOn) firstArrival(wait, net, y, last []float64, pending bool) func(pow func(float64) float64) []float64 {
	if o == nil {
		return nil
	}
	return func(pow func(float64) float64) []float64 {
		P := len(o.w.phases)
		cdfs, ok := o.behind[pending]
		if !ok {
			// cdfs[j]: the CDFs of R_{j+1} + L_{j+1} + G and R_{j+1} +
			// L_{j+2} + G; cdfs[P-2]: of G and L_{P-1} + G.
			cdfs = make([][2][]float64, P-1)
			cdfs[P-2] = [2][]float64{cumulative(last), cumulative(convolve(o.added[P-2], last))}
			rest := last
			for j := P - 3; j >= 0; j-- {
				rest = convolve(rest, o.s.of(o.w.phases[j+1]))
				cdfs[j] = [2][]float64{cumulative(convolve(o.added[j], rest)), cumulative(convolve(o.added[j+1], rest))}
			}
			o.behind[pending] = cdfs
		}
		out := arrivalTerms(y, cdfs[P-2][0], cdfs[P-2][1], o.first, 4, 0, pow)
		end := convolve(wait, net)
		for j := 0; j < P-2; j++ {
			end = convolve(end, o.s.of(o.w.phases[j])) // E_{j+1}
			for t, v := range arrivalTerms(end, cdfs[j][0], cdfs[j][1], o.first, 4, 0, pow) {
				out[t] -= v
			}
		}
		return out
	}
}

// sumCache holds the laws of c service times for any c, made from base
// (the laws of 0, 1, ... service times) by halves.
type sumCache struct {
	base [][]float64
	more map[int][]float64
}

func newSumCache(base [][]float64) *sumCache {
	return &sumCache{base: base, more: map[int][]float64{}}
}

func (s *sumCache) of(c int) []float64 {
	if c < len(s.base) {
		return s.base[c]
	}
	if v, ok := s.more[c]; ok {
		return v
	}
	v := convolve(s.of(c/2), s.of(c-c/2))
	s.more[c] = v
	return v
}
