package ztunnel

// SwapBlueGreenPhases swaps the planner's phases named a and b, for the test that shows the safety
// order property fails on a swap; it returns what puts them back.
func SwapBlueGreenPhases(a, b string) (restore func()) {
	i, j := -1, -1
	for k, p := range blueGreenPhases {
		switch p.name {
		case a:
			i = k
		case b:
			j = k
		}
	}
	if i < 0 || j < 0 {
		panic("no blue-green phase " + a + " or " + b)
	}
	blueGreenPhases[i], blueGreenPhases[j] = blueGreenPhases[j], blueGreenPhases[i]
	return func() { blueGreenPhases[i], blueGreenPhases[j] = blueGreenPhases[j], blueGreenPhases[i] }
}
