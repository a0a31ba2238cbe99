package plan

// Finding codes of a tag move (tags.MoveTag). Each names the tag in details "tag"; Object is the
// tag's webhook configuration (istio-revision-tag-<tag>) unless said otherwise.
const (
	// CodeTagUnknown details: tag, known (comma-separated tags). The tag does not exist.
	CodeTagUnknown Code = "TAG_UNKNOWN"
	// CodeTagNamedLikeRevision details: tag. Object is the revision's istiod Deployment.
	CodeTagNamedLikeRevision Code = "TAG_NAMED_LIKE_REVISION"
	// CodeTagTargetRevisionNotReady details: tag, revision, ready, replicas (empty when the revision has no
	// istiod). Object is the target revision's istiod Deployment.
	CodeTagTargetRevisionNotReady Code = "TAG_TARGET_REVISION_NOT_READY"
	// CodeTagInjectorOverlap details: tag, injector, revision, selects. Object is the other
	// injector's MutatingWebhookConfiguration.
	CodeTagInjectorOverlap Code = "TAG_INJECTOR_OVERLAP"
	// CodeTagAlreadyPointsThere details: tag, revision. Nothing to move.
	CodeTagAlreadyPointsThere Code = "TAG_ALREADY_POINTS_THERE"
)

func init() {
	for c, help := range map[Code]string{
		CodeTagUnknown:                "the tag to move does not exist",
		CodeTagNamedLikeRevision:      "the tag has the name of a revision, so injection could not tell them apart",
		CodeTagTargetRevisionNotReady: "the revision the tag would move to has no ready istiod",
		CodeTagInjectorOverlap:        "after the move, the tag's webhooks would select pods another injector selects: pods would be injected twice",
		CodeTagAlreadyPointsThere:     "the tag already points at the revision: there is nothing to move",
	} {
		codeHelp[c] = help
	}
}
