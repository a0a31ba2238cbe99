package execute_test

import "sort"

func sortStrings(s []string) { sort.Strings(s) }
