package model

import "math"

// One request arriving during the first phase, at its instant, for
// duplicates in two to four groups.
//
// Its accesses reach every duplicate of a group at its instant u. A
// duplicate still in its first phase at T1 = s serves them after it, as
// twoGroupsTerms takes them; one that ended it at F <= s serves them from
// max(F, u), so by s it has done N of the group's k of them, and it
// serves the rest and then its m second-phase accesses from s. Taken
// from s instead, 2x3 and 2x4 at 30% came out 0.009-0.012 slow at p90.
// N >= j when max(F, u) + S(j) <= s (S(j) the sum of j service times), so
// given N = j < k the duplicate has k - j accesses and its m left at s,
// the one in service taken whole: exact for exponential service times
// (memoryless), the map's. The group's k and m are the same at each of
// its duplicates, but its terms are kept by c = k + m (as twoGroupsTerms
// keeps them, and twoGroupsDone averages them over k given m): how c
// splits into the arrival's k and the group's m, which bounds N by k, is
// taken at each duplicate from c's law (the arrival's count and the second
// phase's apart). Kept by k and m, the terms cost 2.3-3 times a
// prediction (arrival1, session 16).

// arrivalStart is what twoGroupsTerms needs to start one arrival's work
// at its instant u (cells): the CDFs of j service times (lcdf[j]) and
// given[c][j], the chance the arrival brought the group j of the c
// accesses ahead of and in its second phase.
type arrivalStart struct {
	u     float64
	lcdf  [][]float64
	given [][]float64
	norm  []float64 // given[c]'s normaliser
	done  []float64 // scratch: P(F <= s, N >= j) by j
	owed  []float64 // scratch: the row twoGroupsTerms reads
}

// newArrivalStart is arrivalStart for an arrival whose count at a group
// has law arrival, the group's second-phase count law second, c below nc.
func newArrivalStart(u float64, arrival, second []float64, lcdf [][]float64, nc, cells int) *arrivalStart {
	given, norm := make([][]float64, nc), make([]float64, nc)
	for c := range given {
		given[c] = make([]float64, c+1)
		total := 0.0
		for j := range given[c] {
			if j < len(arrival) && c-j < len(second) {
				given[c][j] = arrival[j] * second[c-j]
				total += given[c][j]
			}
		}
		norm[c] = total
		for j := range given[c] {
			if total > 0 {
				given[c][j] /= total
			}
		}
	}
	return &arrivalStart{u: u, lcdf: lcdf, given: given, norm: norm, done: make([]float64, len(lcdf)), owed: make([]float64, cells)}
}

// serve sets done[j] = P(F <= s, N >= j) for a duplicate whose first
// phase ends at F (law f, CDF Fcdf): the arrival's j first accesses are
// done by s when max(F, u) + S(j) <= s. It returns how many j weigh.
func (a *arrivalStart) serve(f, Fcdf []float64, s int) int {
	uc := min(s, int(math.Round(a.u)))
	a.done[0] = Fcdf[s]
	for j := 1; j < len(a.lcdf); j++ {
		l := a.lcdf[j]
		v := Fcdf[uc] * l[s-uc]
		for x := uc + 1; x <= s; x++ {
			v += f[x] * l[s-x]
		}
		a.done[j] = v
		if v < 1e-13 {
			return j
		}
	}
	return len(a.lcdf)
}

// owedRow sets owed[z] = P(F <= s, not done by s + z) for a duplicate with
// c accesses ahead of and in its second phase (z from 0 to len-1), given
// serve's done (J of them weigh): with N = j of the arrival's accesses
// done, c - j are left, each j bounded by the arrival's share of c.
func (a *arrivalStart) owedRow(Ubar [][]float64, uEnd []int, c, J, cells int) []float64 {
	row := a.owed[:cells]
	clear(row)
	tail := 1.0 // P(the arrival brought more than j | c)
	given := a.given[c]
	for j := 0; j <= c && j < J; j++ {
		tail -= given[j]
		next := 0.0
		if j+1 < J {
			next = a.done[j+1]
		}
		// N = j: j done and more left (the arrival brought more), or all
		// done (it brought j).
		w := (a.done[j]-next)*math.Max(0, tail) + a.done[j]*given[j]
		if w < 1e-15 {
			continue
		}
		ub := Ubar[c-j][:min(cells, uEnd[c-j])]
		for z, v := range ub {
			row[z] += w * v
		}
	}
	return row
}

// normal is the chance of c accesses ahead of and in the second phase,
// up to the arrival's and the second phase's laws' product (given's
// normaliser).
func (a *arrivalStart) normal(c int) float64 { return a.norm[c] }
