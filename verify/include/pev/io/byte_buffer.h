#pragma once
// pev::io::byte_buffer — the bytes of an io::array: owned (a vector, what writers fill), or a
// read-only view of memory that a shared owner keeps alive (a large tensor's region of a mapped
// dump file; a block a reader filled: a large copy, not zeroed first, an inflated npz member, a
// pipe's bytes; docs/design.md §6.1). Both are read alike through the const members; the members
// that write (mutable_data, resize, assign, clear) first make the bytes owned, copying a view, so
// that a view is never written and a copy of an array never shares writes with another.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace pev::io {

class byte_buffer {
 public:
  byte_buffer() = default;
  /// Owns `bytes`.
  byte_buffer(std::vector<std::byte> bytes) noexcept : owned_(std::move(bytes)), view_(owned_) {}
  /// A read-only view of `bytes`, which `owner` keeps alive and nothing writes while it lives.
  byte_buffer(std::shared_ptr<const void> owner, std::span<const std::byte> bytes) noexcept
      : owner_(std::move(owner)), view_(bytes) {}

  byte_buffer(const byte_buffer& o) : owned_(o.owned_), owner_(o.owner_) { view_from(o); }
  byte_buffer(byte_buffer&& o) noexcept : owned_(std::move(o.owned_)), owner_(std::move(o.owner_)) {
    view_from(o);
    o.reset();
  }
  byte_buffer& operator=(const byte_buffer& o) {
    if (this != &o) *this = byte_buffer(o);
    return *this;
  }
  byte_buffer& operator=(byte_buffer&& o) noexcept {
    if (this != &o) {
      owned_ = std::move(o.owned_);
      owner_ = std::move(o.owner_);
      view_from(o);
      o.reset();
    }
    return *this;
  }
  ~byte_buffer() = default;

  // ---- Reading (owned or view alike) ----
  const std::byte* data() const noexcept { return view_.data(); }
  std::size_t size() const noexcept { return view_.size(); }
  bool empty() const noexcept { return view_.empty(); }
  const std::byte* begin() const noexcept { return view_.data(); }
  const std::byte* end() const noexcept { return view_.data() + view_.size(); }
  const std::byte& operator[](std::size_t i) const noexcept { return view_[i]; }
  std::span<const std::byte> span() const noexcept { return view_; }
  /// Whether the bytes are a view of memory the buffer does not own (a mapped file region, a
  /// shared reader buffer).
  bool is_view() const noexcept { return owner_ != nullptr; }
  /// The same bytes as a view (owned bytes move to a shared owner), so that slices share them.
  byte_buffer shared() && {
    if (!owner_) {
      auto v = std::make_shared<const std::vector<std::byte>>(std::move(owned_));
      const std::span<const std::byte> bytes(*v);
      reset();
      return byte_buffer(std::move(v), bytes);
    }
    return std::move(*this);
  }
  /// Bytes [offset, offset + n) (within size()): a view sharing a view's owner, a copy of owned
  /// bytes.
  byte_buffer slice(std::size_t offset, std::size_t n) const {
    const auto part = view_.subspan(offset, n);
    if (owner_) return byte_buffer(owner_, part);
    return byte_buffer(std::vector<std::byte>(part.begin(), part.end()));
  }

  // ---- Writing (a view is first copied into an owned vector) ----
  std::byte* mutable_data() {
    own();
    return owned_.data();
  }
  /// Resizes; new bytes are zero.
  void resize(std::size_t n) {
    own();
    owned_.resize(n);
    view_ = owned_;
  }
  void assign(std::size_t n, std::byte value) {
    drop_view();
    owned_.assign(n, value);
    view_ = owned_;
  }
  template <class It>
  void assign(It first, It last) {
    std::vector<std::byte> v(first, last);  // `first` may point into this buffer
    drop_view();
    owned_ = std::move(v);
    view_ = owned_;
  }
  void clear() noexcept { reset(); }
  void pop_back() {
    own();
    owned_.pop_back();
    view_ = owned_;
  }

  /// The same bytes.
  friend bool operator==(const byte_buffer& a, const byte_buffer& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // The view of `o` (a copy or a move of it): its owner's memory, else this buffer's own vector.
  void view_from(const byte_buffer& o) noexcept {
    view_ = owner_ ? o.view_ : std::span<const std::byte>(owned_);
  }
  void own() {
    if (!owner_) return;
    owned_.assign(view_.begin(), view_.end());
    owner_.reset();
    view_ = owned_;
  }
  void drop_view() noexcept {
    owner_.reset();
    view_ = owned_;
  }
  void reset() noexcept {
    owned_.clear();
    owner_.reset();
    view_ = {};
  }

  std::vector<std::byte> owned_;
  std::shared_ptr<const void> owner_;  // set: view_ is a view of memory it keeps alive
  std::span<const std::byte> view_;    // the bytes: owned_'s, or the owner's
};

}  // namespace pev::io
