package entity

// SplitPage is splitPage, for the package's external tests.
var SplitPage = splitPage
