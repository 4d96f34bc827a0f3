package audit

// Silent reports whether an allowed call in scope s would leave no trace:
// the scope is open, no OnCall callback is set, and allowed calls are not
// logged. A facade may then decide a call with the scope's pure policies
// (Scope.Policies) and skip Check when every one of them allows it; a call
// any policy denies must still go through Check, which asks BeforeDeny,
// applies the mode and records it. The answer can change (Guard.SetPolicy
// and friends), so ask per call.
func (s *Scope) Silent() bool {
	return s != nil && s.g.onCall == nil && !s.g.logAllows && s.Err() == nil
}
