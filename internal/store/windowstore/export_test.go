package windowstore

// HoldsOld is holdsOld, for the tests of the look (look_test.go).
var HoldsOld = (*Store).holdsOld
