// Run under `mtrace record --stacks 16` by cxx_names.sh: C++ allocations whose callsites must come
// back demangled and at this file's lines.
//   - geo::make_shapes(int) news N geo::Circle objects (operator new called from the user's code);
//   - fill<double>(std::vector<double>&, int) reserves a vector: at -O2 the std::vector and allocator
//     code is inlined from /usr/include/c++, so the return address's line is a library header's and
//     the report must name this file's line instead.
// The test finds the two lines by their comments ("// shapes_line", "// reserve_line").
#include <vector>

namespace geo {
struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
};
struct Circle : Shape {
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.0 * r_ * r_; }
    double r_;
};

__attribute__((noinline)) std::vector<Shape *> make_shapes(int n)
{
    std::vector<Shape *> v;
    v.reserve(n);
    for (int i = 0; i < n; i++)
        v.push_back(new Circle(i)); // shapes_line
    return v;
}
} // namespace geo

template <typename T> __attribute__((noinline)) void fill(std::vector<T> &v, int n)
{
    v.reserve(n); // reserve_line
    for (int i = 0; i < n; i++)
        v.push_back(T(i));
}

int main()
{
    std::vector<geo::Shape *> shapes = geo::make_shapes(7);
    std::vector<double> d;
    fill(d, 1000);
    double sum = d[999];
    for (geo::Shape *s : shapes) {
        sum += s->area();
        delete s;
    }
    return sum > 0 ? 0 : 1;
}
