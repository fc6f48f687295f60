package memory

import (
	"github.com/google/uuid"

	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// Every request rule (field checks, limits, the values they check) is libs/memoryrules', written once for this
// service and its in-memory fake; Service calls them before anything reaches the store.

// NewID returns a fresh time-ordered UUID (v7), so ids of rows written together sort and cluster together.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return u.String()
}

// Normalize validates a search (the mysis id when needMysis, the query text, the limit) and returns it ready for
// the store: canonical mysis id, exclusion operators bounded (BoundQueryOperators), the limit defaulted and capped.
func (q SearchQuery) Normalize(needMysis bool) (SearchQuery, error) {
	id, limit, err := rules.ValidateSearch(needMysis, q.MysisID, q.Text, q.Limit)
	if err != nil {
		return q, err
	}
	if needMysis {
		q.MysisID = id
	}
	q.Text = BoundQueryOperators(q.Text)
	q.Parsed = ParseSearchText(q.Text)
	q.Limit = limit
	return q, nil
}
