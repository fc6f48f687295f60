package grpcapi

// HeldCarryWeight is the cache weight of the carried rows s holds for the mysis (0: none).
func HeldCarryWeight(s *Service, id string) uint32 {
	if c, ok := s.carries.c.GetIfPresent(id); ok {
		return c.weight()
	}
	return 0
}

// HeldCarries is how many myses' carried rows s holds, once the cache's pending evictions are done.
func HeldCarries(s *Service) int {
	s.carries.c.CleanUp()
	return s.carries.c.EstimatedSize()
}
