package model

// The lone batch: a batch's other work splits over the groups with its
// totals fixed.

// poissonPoint is a law drawn with Poisson totals of means first and then
// (the others' counts at each group apart), and its weight.
type poissonPoint struct{ first, then, weight float64 }

// depoissonised is the points whose weighted sum is a law with the
// others' counts split over the groups (multinomial given their totals:
// first's fixed at A, then's of mean meanX and variance varX). Drawn
// Poisson apart at each group, the counts given their total are the
// multinomial split, so a law h~ taken with Poisson totals of mean mu is
// E h(N), N Poisson(mu) (central moments mu, mu, 3 mu^2 + mu). Inverted
// to the fourth order, with h~(k) the k-th derivative in mu,
// h(A) = h~ - A/2 h~(2) + A/3 h~(3) + (A^2/8 - A/4) h~(4) at mu = A; over
// then's law (taken normal beyond its variance), E h(X) has there
// (varX - meanX)/2, meanX/3 - varX/2 and meanX^2/8 - meanX/4 + varX/3 -
// varX meanX/4 + varX^2/8; the two totals' cross term is the product of
// their second-order terms. The derivatives are differences of laws at
// means one and two apart.
//
// To the second order only (h~ - A/2 h~(2)), the law of a lone batch on two groups was too wide (fast
// at the bottom, slow at the top): against every split of the others'
// counts over the two servers enumerated, +0.003 at p10-p30 and -0.003
// at p70-p90; to the fourth order with the cross term, within 0.0007.
func depoissonised(A, meanX, varX float64) []poissonPoint {
	// weights[da+2][dx+2]: the law at means A + da, meanX + dx
	var weights [5][5]float64
	weights[2][2] = 1
	fixed := axisTerms(A, -A/2, A/3, A*A/8-A/4)
	random := axisTerms(meanX, (varX-meanX)/2, meanX/3-varX/2, meanX*meanX/8-meanX/4+varX/3-varX*meanX/4+varX*varX/8)
	for d := range 5 {
		weights[d][2] += fixed[d]
		weights[2][d] += random[d]
	}
	if A >= 1 && meanX >= 1 {
		cross := (-A / 2) * (varX - meanX) / 2
		for da := range 5 {
			for dx := range 5 {
				weights[da][dx] += cross * stencil2[da] * stencil2[dx]
			}
		}
	}
	var points []poissonPoint
	for da := range 5 {
		for dx := range 5 {
			if w := weights[da][dx]; w != 0 {
				points = append(points, poissonPoint{A + float64(da-2), meanX + float64(dx-2), w})
			}
		}
	}
	// the law at the means first (batchServers and batchBarrierFor take
	// it on their finer grid)
	for i, p := range points {
		if p.first == A && p.then == meanX {
			points[0], points[i] = points[i], points[0]
		}
	}
	return points
}

// axisTerms is the weights, at a total's mean mu + d (d = -2..2), of c2
// h”, c3 h”' and c4 h”” taken by differences (h” = D2 - D4/12): to
// the fourth order where mu >= 2, to the second (c2 D2 alone) where
// 1 <= mu < 2 (a mean two below would be negative), none below.
func axisTerms(mu, c2, c3, c4 float64) [5]float64 {
	var w [5]float64
	switch {
	case mu >= 2:
		for d := range 5 {
			w[d] = c2*(stencil2[d]-stencil4[d]/12) + c3*stencil3[d] + c4*stencil4[d]
		}
	case mu >= 1:
		for d := range 5 {
			w[d] = c2 * stencil2[d]
		}
	}
	return w
}

// stencil2, stencil3 and stencil4 are the differences at offsets -2..2
// that take a function's second, third and fourth derivatives.
var (
	stencil2 = [5]float64{0, 1, -2, 1, 0}
	stencil3 = [5]float64{-0.5, 1, 0, -1, 0.5}
	stencil4 = [5]float64{1, -4, 6, -4, 1}
)
