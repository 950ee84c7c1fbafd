package util

import "errors"

// exitStranded means preflight found that the deletion it was asked about would leave
// objects stuck.
const exitStranded = 5

// StrandedError is the error of a preflight whose deletion would leave objects stuck:
// the hazards are printed already, so main only exits with status 5.
func StrandedError(msg string) error {
	return &exitCodeError{Code: exitStranded, Err: errors.New(msg), Silent: true}
}

// PredictionIncompleteError is the error of a preflight that found nothing, but could
// not read everything: the warning is printed already, so main only exits with status 3.
func PredictionIncompleteError() error {
	return incompleteError(errors.New("the prediction is incomplete"))
}
