#include "suffix_tree.h"

#include <algorithm>
#include <stdexcept>

namespace suffix {

Node* Node::child(int32_t token) const {
  if (index) {
    auto it = index->find(token);
    return it == index->end() ? nullptr : it->second;
  }
  for (const auto& c : children)
    if (c->label.front() == token) return c.get();
  return nullptr;
}

SuffixTree::SuffixTree(int32_t max_depth) : max_depth_(max_depth) {
  if (max_depth < 1) throw std::invalid_argument("suffix tree: max_depth must be >= 1");
}

const std::vector<int32_t>* SuffixTree::tokens(int64_t seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second.tokens;
}

void SuffixTree::append(int64_t seq, int32_t token) {
  Sequence& s = sequences_[seq];
  s.tokens.push_back(token);
  s.active.push_back(&root_);  // the suffix that starts at the new token
  root_.count++;
  for (Node*& at : s.active) at = step(at, token);
  // The longest suffix reached max_depth: complete, it grows no more.
  if (static_cast<int32_t>(s.active.size()) >= max_depth_) s.active.pop_front();
}

void SuffixTree::extend(int64_t seq, std::span<const int32_t> tokens) {
  for (int32_t t : tokens) append(seq, t);
}

namespace {

void index_child(Node* parent, Node* child) {
  if (parent->index) {
    parent->index->emplace(child->label.front(), child);
  } else if (parent->children.size() > Node::kIndexFrom) {
    parent->index = std::make_unique<std::unordered_map<int32_t, Node*>>();
    for (const auto& c : parent->children) parent->index->emplace(c->label.front(), c.get());
  }
}

}  // namespace

// One occurrence ending at the end of `at` grows by `token`; returns where it ends now.
Node* SuffixTree::step(Node* at, int32_t token) {
  if (at != &root_ && at->children.empty() && at->count == 1) {  // its own leaf: grow it in place
    at->label.push_back(token);
    at->depth++;
    return at;
  }
  Node* child = at->child(token);
  if (!child) {
    auto leaf = std::make_unique<Node>();
    leaf->parent = at;
    leaf->label = {token};
    leaf->count = 1;  // the smallest count there is: last in the order keeps it sorted
    leaf->depth = at->depth + 1;
    leaf->rank = at->children.size();
    Node* raw = leaf.get();
    at->children.push_back(std::move(leaf));
    at->continued++;
    index_child(at, raw);
    num_nodes_++;
    return raw;
  }
  if (child->label.size() > 1) child = split_after_first(child);  // end at a node boundary
  bump(child);
  return child;
}

// child's label [t, x, ...] becomes a new node [t] with child [x, ...] below it.
Node* SuffixTree::split_after_first(Node* child) {
  Node* parent = child->parent;
  auto mid = std::make_unique<Node>();
  Node* raw = mid.get();
  mid->parent = parent;
  mid->label = {child->label.front()};
  mid->count = child->count;
  mid->continued = child->count;
  mid->depth = parent->depth + 1;
  mid->rank = child->rank;
  std::unique_ptr<Node> owned = std::move(parent->children[child->rank]);
  parent->children[child->rank] = std::move(mid);
  if (parent->index) (*parent->index)[raw->label.front()] = raw;
  child->label.erase(child->label.begin());
  child->parent = raw;
  child->rank = 0;
  raw->children.push_back(std::move(owned));
  num_nodes_++;
  return raw;
}

// Puts `node` at index `to` among its siblings, the sibling there taking its old place.
void SuffixTree::trade_places(Node* node, size_t to) {
  if (to == node->rank) return;
  Node* parent = node->parent;
  std::swap(parent->children[to], parent->children[node->rank]);
  parent->children[node->rank]->rank = node->rank;
  node->rank = to;
}

// count + 1, keeping the siblings in count order: the node trades places with the first sibling
// of its old count (found by binary search -- a root can have thousands of children of the same
// count).
void SuffixTree::bump(Node* node) {
  const auto& siblings = node->parent->children;
  const int64_t old = node->count;
  const auto first = std::partition_point(siblings.begin(), siblings.begin() + static_cast<int64_t>(node->rank),
                                          [old](const std::unique_ptr<Node>& s) { return s->count > old; });
  trade_places(node, static_cast<size_t>(first - siblings.begin()));
  node->count++;
  node->parent->continued++;
}

// count - 1: the node trades places with the last sibling of its old count.
void SuffixTree::lower(Node* node) {
  const auto& siblings = node->parent->children;
  const int64_t old = node->count;
  const auto end = std::partition_point(siblings.begin() + static_cast<int64_t>(node->rank), siblings.end(),
                                        [old](const std::unique_ptr<Node>& s) { return s->count >= old; });
  trade_places(node, static_cast<size_t>(end - siblings.begin()) - 1);
  node->count--;
  node->parent->continued--;
}

// Deletes a node no occurrence reaches (its subtree, also unreached, goes with it).
void SuffixTree::delete_node(Node* node) {
  Node* parent = node->parent;
  auto& siblings = parent->children;
  int64_t gone = 0;
  std::vector<const Node*> stack = {node};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    ++gone;
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  num_nodes_ -= gone;
  if (parent->index) parent->index->erase(node->label.front());
  const size_t rank = node->rank;
  siblings.erase(siblings.begin() + static_cast<int64_t>(rank));  // frees the subtree
  for (size_t r = rank; r < siblings.size(); ++r) siblings[r]->rank = r;
}

void SuffixTree::remove(int64_t seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  const std::vector<int32_t> tokens = std::move(it->second.tokens);
  sequences_.erase(it);
  const auto n = static_cast<int64_t>(tokens.size());
  for (int64_t start = 0; start < n; ++start) {
    const int64_t end = start + std::min<int64_t>(max_depth_, n - start);
    root_.count--;
    Node* node = &root_;
    Node* first_unreached = nullptr;
    for (int64_t i = start; i < end;) {
      Node* child = node->child(tokens[i]);
      lower(child);
      if (child->count == 0 && !first_unreached) first_unreached = child;
      i += static_cast<int64_t>(child->label.size());
      node = child;
    }
    if (first_unreached) delete_node(first_unreached);
  }
}

Position SuffixTree::find(std::span<const int32_t> pattern) const {
  Position at{&root_, 0};
  for (int32_t token : pattern) {
    if (at.at_end()) {
      const Node* child = at.node->child(token);
      if (!child) return {};
      at = {child, 1};
    } else if (at.node->label[at.offset] == token) {
      at.offset++;
    } else {
      return {};
    }
  }
  return at;
}

std::vector<Position> SuffixTree::own_suffix_ends(int64_t seq) const {
  std::vector<Position> ends(static_cast<size_t>(std::max(max_depth_ - 1, 0)));
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return ends;
  const std::deque<Node*>& active = it->second.active;
  for (size_t length = 1; length <= active.size() && length <= ends.size(); ++length) {
    const Node* node = active[active.size() - length];
    ends[length - 1] = {node, node->label.size()};
  }
  return ends;
}

namespace {

std::string describe(const Node& node) {
  return "node at depth " + std::to_string(node.depth) + " (count " + std::to_string(node.count) + ")";
}

}  // namespace

std::string SuffixTree::check_node(const Node& node) const {
  if (node.index && node.index->size() != node.children.size()) return describe(node) + ": its index is stale";
  int64_t reached = 0;
  for (size_t r = 0; r < node.children.size(); ++r) {
    const Node* c = node.children[r].get();
    if (c->rank != r) return describe(*c) + ": rank " + std::to_string(c->rank) + " at index " + std::to_string(r);
    if (c->parent != &node) return describe(*c) + ": wrong parent link";
    if (c->label.empty()) return describe(*c) + ": empty label";
    if (node.child(c->label.front()) != c) return describe(*c) + ": not found under its first token";
    if (c->depth != node.depth + static_cast<int32_t>(c->label.size())) return describe(*c) + ": wrong depth";
    if (c->depth > max_depth_) return describe(*c) + ": deeper than max_depth";
    if (c->count < 1) return describe(*c) + ": no occurrence reaches it";
    if (r > 0 && node.children[r - 1]->count < c->count) return describe(*c) + ": children out of count order";
    reached += c->count;
  }
  if (reached > node.count) return describe(node) + ": its children count more occurrences than it";
  if (reached != node.continued) return describe(node) + ": its continuation total is stale";
  for (const auto& c : node.children)
    if (std::string why = check_node(*c); !why.empty()) return why;
  return "";
}

std::string SuffixTree::check_integrity() const {
  if (std::string why = check_node(root_); !why.empty()) return why;
  // Walk every suffix occurrence of every sequence: each must be in the tree, end at a node
  // boundary, and the nodes it reaches are what the counts count.
  std::unordered_map<const Node*, int64_t> expected;
  int64_t occurrences = 0;
  for (const auto& [id, s] : sequences_) {
    const auto n = static_cast<int64_t>(s.tokens.size());
    for (int64_t start = 0; start < n; ++start) {
      const int64_t length = std::min<int64_t>(max_depth_, n - start);
      ++occurrences;
      const Position end = find(std::span(s.tokens).subspan(start, length));
      const std::string which = "the suffix of sequence " + std::to_string(id) + " at " + std::to_string(start);
      if (!end.valid()) return which + " is not in the tree";
      if (!end.at_end()) return which + " ends inside an edge";
      for (const Node* node = end.node; node != &root_; node = node->parent) expected[node]++;
      // A growing suffix's recorded end is where it really ends.
      const auto growing = static_cast<int64_t>(s.active.size());
      if (n - start <= growing && s.active[growing - (n - start)] != end.node)
        return which + ": its active end is stale";
    }
  }
  if (root_.count != occurrences)
    return "the root counts " + std::to_string(root_.count) + " occurrences, not " + std::to_string(occurrences);
  int64_t nodes = 1;
  std::vector<const Node*> stack = {&root_};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const auto& owned : node->children) {
      const Node* c = owned.get();
      ++nodes;
      stack.push_back(c);
      const int64_t want = expected.count(c) ? expected.at(c) : 0;
      if (c->count != want) return describe(*c) + ": " + std::to_string(want) + " occurrences reach it";
    }
  }
  if (nodes != num_nodes_) return "the tree has " + std::to_string(nodes) + " nodes, not " + std::to_string(num_nodes_);
  return "";
}

}  // namespace suffix
