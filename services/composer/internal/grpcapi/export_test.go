package grpcapi

// HeldCarryWeight is the cache weight of the carried rows s holds for the mysis (0: none).
func HeldCarryWeight(s *Service, id string) uint32 { return s.windows.HeldWeight(id) }

// HeldCarries is how many myses' carried rows s holds, once the cache's pending evictions are done.
func HeldCarries(s *Service) int { return s.windows.Held() }
