// The seed's workload: the smallest Java program, so start-up is all that is measured.
public class Hello {
    public static void main(String[] args) {
        System.out.println("Hello");
    }
}
