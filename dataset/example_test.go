package dataset_test

import (
	"fmt"

	"github.com/dpmf/dpmf/dataset"
)

// The paper's synthetic(alpha, beta) data: n learners, R rounds, tau
// clients per learner and round, d = 60 features by default.
func ExampleSynthetic_Dataset() {
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 800, 10, 1)
	if err != nil {
		panic(err)
	}
	a, y := data.Sample(3, 799, 9) // learner 3's last client
	fmt.Println(data.Name, data.Len(), "samples of dimension", data.Dim)
	fmt.Println(len(a), y == 1 || y == -1)
	// Output:
	// synthetic(0.1,0.1) 80000 samples of dimension 60
	// 60 true
}

// A data set of your own: NewDataset gives a zero data set of the shape;
// Index(i, r, t) is the row of learner i's client at step t of round r,
// whose features go into Features[row*Dim:(row+1)*Dim] and label into
// Labels[row]. Sample(i, r, t) reads them back (the features as a view).
func ExampleNewDataset() {
	data, err := dataset.NewDataset("mine", 2, 3, 1, 2) // 2 learners, 3 rounds, tau 1, d 2
	if err != nil {
		panic(err)
	}
	for i := range data.Learners {
		for r := range data.Rounds {
			row := data.Index(i, r, 0)
			copy(data.Features[row*data.Dim:], []float64{float64(i), float64(r)})
			data.Labels[row] = float64(1 - 2*(i%2))
		}
	}
	if err := data.Validate(); err != nil {
		panic(err)
	}
	a, y := data.Sample(1, 2, 0)
	fmt.Println(a, y, data.Round(2).Len())
	// Output: [1 2] -1 2
}

// A CSV file of your own (label first, then the features), standardised
// and dealt to learners and rounds.
func ExampleLoadCSV() {
	t, err := dataset.LoadCSV("../testdata/breast_cancer.csv")
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Len(), "rows,", t.Dim, "features, first", t.Names[0])
	data, err := t.Deal(2, 140, 2, dataset.Split{Kind: dataset.IID}, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(data.Learners, data.Rounds, data.Tau, data.Len())
	// Output:
	// 569 rows, 30 features, first mean_radius
	// 2 140 2 560
}
