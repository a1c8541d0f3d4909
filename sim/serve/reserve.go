package serve

// ReservedBlocks returns the KV blocks the running requests still need to
// reach their final length (prompt + output): for each, the blocks of
// prompt + output tokens less those of the KV it holds now, summed. It is
// TensorRT-LLM's GUARANTEED_NO_EVICT reservation
// (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp
// GuaranteedNoEvictScheduler::impl, through scheduledBlocksManager.cpp
// NoEvictScheduledBlocksManager::decrementReservedBlocks, of
// kvCacheManager.cpp KVCacheManager::getRemainingBlocksToCompletion:
// ceil((prompt_len + max_new_tokens) / tokens_per_block) less the blocks
// allocated), which policies.TRTLLM reads through policies.ReserveView.
// A request whose KV is handed off to a decode instance grows no more
// here. It walks the running list: O(running), paid only by a batcher
// that asks.
func (in *Instance) ReservedBlocks() int {
	n := 0
	for r := in.head; r != nil; r = r.next {
		kv := r.computed
		switch r.state {
		case stateHandoff:
			continue
		case stateDecode:
			kv = r.k0 + int(in.decCounter-r.d0)
		}
		n += max(in.blocksOf(r.prompt+r.output)-in.blocksOf(kv), 0)
	}
	return n
}
